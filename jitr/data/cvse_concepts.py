"""Readers of CVSE's official concept files (BruceW91/CVSE, ECCV 2020).

CVSE ships them per dataset under ``data/<dataset>_annotations/Concept_annotations/``. The
structure below was verified on the real F30K files (CVSE @ 94c2191f); ``C`` is the number of
concepts (``--num_attribute``, 300 for F30K) and ``D`` the width of their word vectors
(``--input_channel``, 300).

- ``f30k_adj_concepts.pkl`` (``--adj_file``): a protocol 3 pickle of a ``dict`` with the
  ``str`` keys ``nums`` (``int32 [C]``: how many captions mention each concept) and
  ``adj_O_P``, ``adj_O_M``, ``adj_all`` (``int32 [C, C]``: co-occurrence counts). Read by
  ``util/util_C_GCN.py:gen_A_concept``, which divides each matrix's row ``i`` by
  ``nums[i]`` and, in the ``Complex`` mode that ``model_CVSE.py`` uses (``t=0.3``), applies
  ``rescale_adj_matrix`` (``5 ** (A - 0.02) - 5 ** -0.02``), binarises at ``t``, scales by
  ``0.25 / column sum``, normalises the columns and adds the identity; ``util/C_GCN.py``
  keeps the three results as the parameters ``adj_O_P``, ``adj_O_M`` and ``adj_all`` and
  normalises them with ``gen_adj`` (``D^-1/2 A^T D^-1/2``) on every forward pass. Read here
  by :func:`read_concept_statistics`.
- ``f30k_concepts_glove_word2vec.pkl`` (``--inp_name``): a protocol 3 pickle of one
  ``float64 [C, D]`` array, the GloVe vector of each concept, the input of the concept GCN.
  Read by ``data.py`` (``PrecompDataset_Flickr30k.__init__``, ``pickle.load``) and fed to
  ``C_GCN.forward`` as ``inp``. Read here by :func:`read_concept_vectors`.
- ``vocab_f30k_concepts.pkl``: a protocol 3 pickle of a ``dict`` with the ``str`` keys
  ``words`` (``C`` ``str``, the concepts in id order), ``counts`` (``C`` ``int``, their
  corpus counts, decreasing within each part of speech) and ``poss`` (``C`` ``str``: a part
  of speech tag such as ``OBJ``). No official script reads it (the concept names come from
  ``category_concepts.json``); its words equal that file's, in the same order. Read here by
  :func:`read_concept_vocabulary`.
- ``all_f30k_concept_label.json`` (``get_paths`` in ``data.py``): a JSON array of
  ``{"img_id": "<decimal>", "concept_labels": [<id>, ...]}``, one per image (31014 images,
  ids ``"0"`` .. ``"31013"``, 1 to 33 distinct labels each, not sorted). ``data.py`` matches
  ``img_id`` against ``str`` of the ids in ``<split>_ids.txt`` and turns the first match's
  labels into a multi-hot target of length ``C`` (training split only; other splits label
  each caption by the concept words it contains). Read here by :func:`read_concept_labels`.
- ``category_concepts.json`` (``--concept_name``): a JSON object ``{word: id}`` whose ids
  are ``0 .. C-1`` in file order. ``data.py`` enumerates its keys in file order,
  lemmatises each, and uses the position as the concept id when labelling a caption. Read
  here by :func:`read_category_concepts`.

Pickles are read by an unpickler that admits only these globals and refuses every other
one, and every persistent id, before anything it names is called:

- ``numpy.core.multiarray._reconstruct`` / ``numpy._core.multiarray._reconstruct``, replaced
  by a wrapper that builds only an empty plain ``numpy.ndarray`` (class argument
  ``numpy.ndarray``, shape ``(0,)``, type code ``b"b"``, as numpy pickles an array);
- ``numpy.ndarray``, admitted only as that class argument: calling it is refused;
- ``numpy.dtype``, replaced by a wrapper that builds only boolean, integer or floating
  dtypes (no object, string or structured dtypes).

The real files (protocol 3) need nothing else (no ``numpy.core.multiarray.scalar``). So
Python 3 pickles of protocol 0 to 2 (which spell byte strings as ``_codecs.encode`` calls)
and of protocol 5 (``numpy._core.numeric._frombuffer``) are refused. Every array read is
checked to be a plain numeric ``numpy.ndarray``. Byte strings of Python 2 pickles are
decoded as Latin-1, as ``numpy.load`` does, so Python 2 arrays can be read (the F30K files
are Python 3 pickles and hold no such strings). Every problem raises one ``ValueError``
line naming the file and what was expected (``FileNotFoundError`` for a missing file).
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import re
import types
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitr import fileio, paths

ADJACENCY_KEYS = ("adj_O_P", "adj_O_M", "adj_all")
_STATISTICS = (
  "CVSE's pickled concept statistics: a dict of nums [C] and adj_O_P, adj_O_M, adj_all [C, C]"
)
_VECTORS = "CVSE's pickled concept word vectors: one float array [C, D]"
_VOCABULARY = "CVSE's pickled concept vocabulary: a dict of the lists words, counts and poss"
_LABELS = 'CVSE\'s concept labels: a JSON array of {"img_id": "<decimal>", "concept_labels": [ids]}'
_CATEGORIES = "CVSE's category concepts: a JSON object of word -> id, ids 0..C-1 in file order"
_REFUSAL = "an official CVSE concept file holds only numpy arrays and plain containers"
_RECONSTRUCT_MODULES = ("numpy.core.multiarray", "numpy._core.multiarray")
_NUMERIC_KINDS = "biuf"
_DECIMAL_RE = re.compile(r"0|[1-9][0-9]*")
_NUMPY_RECONSTRUCT, _NUMPY_RECONSTRUCT_ARGS = np.ndarray.__reduce__(np.zeros(0))[:2]
_FILES = {
  "f30k": {
    "statistics": "f30k_adj_concepts.pkl",
    "vectors": "f30k_concepts_glove_word2vec.pkl",
    "vocabulary": "vocab_f30k_concepts.pkl",
    "labels": "all_f30k_concept_label.json",
    "categories": "category_concepts.json",
  },
}


class _RefusedPickle(ValueError):
  """A pickle asked for something the reader does not admit (the message says what)."""


class _NdarrayClass:
  """Stand-in for the pickled global ``numpy.ndarray``: only ``_reconstruct``'s class argument."""

  def __init__(self, path: str):
    self._path = path

  def __call__(self, *args: Any, **kwargs: Any) -> Any:
    raise _RefusedPickle(
      f"{self._path}: refusing a call of numpy.ndarray; arrays are built only by "
      f"numpy.core.multiarray._reconstruct, and {_REFUSAL}"
    )


class _ConceptUnpickler(pickle.Unpickler):
  """Unpickler whose ``find_class`` admits only the globals listed in the module docstring."""

  def __init__(self, file: Any, path: str):
    super().__init__(file, encoding="latin1")
    self._path = path
    self._ndarray = _NdarrayClass(path)

  def find_class(self, module: str, name: str) -> Any:
    if name == "_reconstruct" and module in _RECONSTRUCT_MODULES:
      return self._reconstruct
    if module == "numpy" and name == "ndarray":
      return self._ndarray
    if module == "numpy" and name == "dtype":
      return self._dtype
    raise _RefusedPickle(f"{self._path}: refusing the pickled global {module}.{name}; {_REFUSAL}")

  def persistent_load(self, pid: Any) -> Any:
    raise _RefusedPickle(f"{self._path}: refusing a pickled persistent id; {_REFUSAL}")

  def _reconstruct(self, cls: Any = None, shape: Any = None, code: Any = None) -> np.ndarray:
    """``numpy.core.multiarray._reconstruct(numpy.ndarray, (0,), b"b")`` and nothing else."""
    if cls is not self._ndarray or shape != (0,) or code not in (b"b", "b"):
      shown = "numpy.ndarray" if cls is self._ndarray else repr(cls)
      raise _RefusedPickle(
        f"{self._path}: refusing numpy.core.multiarray._reconstruct({shown}, {shape!r}, "
        f"{code!r}); only a plain numpy.ndarray is rebuilt"
      )
    return _NUMPY_RECONSTRUCT(np.ndarray, (0,), b"b")

  def _dtype(self, obj: Any = None, align: Any = False, copy: Any = False) -> np.dtype:
    """``numpy.dtype(obj, align, copy)`` for a numeric type string only."""
    flags_ok = all(isinstance(v, (bool, int)) for v in (align, copy))
    if isinstance(obj, str) and flags_ok and re.fullmatch(r"[<>=|]?[a-z][0-9]*", obj):
      try:
        dtype = np.dtype(obj)
      except TypeError:
        dtype = None
      if dtype is not None and dtype.kind in _NUMERIC_KINDS and not dtype.fields:
        return np.dtype(obj, bool(align), bool(copy))
    raise _RefusedPickle(
      f"{self._path}: refusing numpy.dtype({obj!r}, {align!r}, {copy!r}); only boolean, "
      "integer and floating dtypes are read"
    )


def _require_file(path: str, expected: str) -> None:
  """Raises ``FileNotFoundError`` naming ``path`` when it is not a file."""
  if not paths.isfile(path):
    raise FileNotFoundError(f"{path}: no such file; expected {expected}")


def _unpickle(path: str, expected: str) -> Any:
  """The object pickled in ``path``, read by the restricted unpickler; the whole file must
  be one pickle."""
  _require_file(path, expected)
  if paths.getsize(path) == 0:
    raise ValueError(f"{path}: empty file; expected {expected}")
  truncated = (
    f"{path}: truncated pickle (the file ends before the pickle does); expected {expected}"
  )
  with paths.open(path, "rb") as f:
    try:
      obj = _ConceptUnpickler(f, path).load()
    except _RefusedPickle as err:
      raise ValueError(str(err)) from None
    except EOFError:
      raise ValueError(truncated) from None
    except pickle.UnpicklingError as err:
      if "truncated" in str(err):
        raise ValueError(truncated) from None
      raise ValueError(f"{path}: not a pickle ({err}); expected {expected}") from None
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, MemoryError) as err:
      raise ValueError(
        f"{path}: not a readable pickle ({type(err).__name__}: {err}); expected {expected}"
      ) from None
    if f.read(1):
      raise ValueError(f"{path}: data after the end of the pickle; expected {expected} alone")
  return obj


def _describe(obj: Any) -> str:
  """A short description of an unpickled or decoded object for an error message."""
  if isinstance(obj, np.ndarray):
    return f"a {obj.dtype} array of shape {obj.shape}"
  if isinstance(obj, dict):
    return f"a dict with the keys {list(obj)[:6]}"
  return f"a {type(obj).__name__}"


def _array(path: str, field: str, value: Any, ndim: int, kinds: str, expected: str) -> np.ndarray:
  """``value`` when it is a plain ``numpy.ndarray`` of ``ndim`` dimensions whose dtype kind
  is one of ``kinds``, with finite values."""
  if type(value) is not np.ndarray or value.ndim != ndim or value.dtype.kind not in kinds:
    raise ValueError(f"{path}: {field} is {_describe(value)}; expected {expected}")
  if value.dtype.kind == "f" and not np.isfinite(value).all():
    raise ValueError(f"{path}: {field} holds NaN or infinite values; expected {expected}")
  return value


def _frozen(array: np.ndarray, dtype: Any) -> np.ndarray:
  """A read-only copy of ``array`` as ``dtype``."""
  out = np.array(array, dtype=dtype)
  out.setflags(write=False)
  return out


@dataclasses.dataclass(frozen=True)
class ConceptStatistics:
  """The concept statistics of CVSE's ``*_adj_concepts.pkl``.

  Attributes:
    counts: ``int64 [C]``, the file's ``nums``: how often each concept occurs.
    co_occurrence: the file's ``adj_O_P``, ``adj_O_M`` and ``adj_all`` by those names, each
      ``float64 [C, C]`` co-occurrence counts, as ``gen_A_concept`` reads them.
  """

  counts: np.ndarray
  co_occurrence: Mapping[str, np.ndarray]

  @property
  def num_concepts(self) -> int:
    """``C``, the number of concepts."""
    return int(self.counts.shape[0])


def read_concept_statistics(path: str | os.PathLike) -> ConceptStatistics:
  """The statistics of a CVSE ``*_adj_concepts.pkl``: a pickled dict with exactly the keys
  ``nums`` (non-negative integers ``[C]``) and ``adj_O_P``, ``adj_O_M``, ``adj_all``
  (non-negative numbers ``[C, C]``), as :class:`ConceptStatistics` of read-only arrays
  (``counts`` int64, ``co_occurrence`` float64). Nothing the pickle names is run."""
  path = os.fspath(path)
  obj = _unpickle(path, _STATISTICS)
  keys = ("nums", *ADJACENCY_KEYS)
  if not isinstance(obj, dict) or set(obj) != set(keys):
    raise ValueError(f"{path}: holds {_describe(obj)}; expected {_STATISTICS}")
  nums = _array(path, "nums", obj["nums"], 1, "iu", "non-negative integer counts [C]")
  c = nums.shape[0]
  if c == 0 or (nums < 0).any():
    raise ValueError(f"{path}: nums has {c} counts, min {nums.min(initial=0)}; expected C > 0 "
                     "non-negative counts")  # fmt: skip
  co_occurrence = {}
  for key in ADJACENCY_KEYS:
    expected = f"non-negative co-occurrence counts [{c}, {c}] (C = {c} from nums)"
    adj = _array(path, key, obj[key], 2, "biuf", expected)
    if adj.shape != (c, c) or (adj < 0).any():
      raise ValueError(f"{path}: {key} is {_describe(adj)}, min {adj.min(initial=0)}; "
                       f"expected {expected}")  # fmt: skip
    co_occurrence[key] = _frozen(adj, np.float64)
  return ConceptStatistics(_frozen(nums, np.int64), types.MappingProxyType(co_occurrence))


def read_concept_vectors(path: str | os.PathLike) -> np.ndarray:
  """The concept word vectors of a CVSE ``*_concepts_glove_word2vec.pkl`` (one pickled
  finite float array ``[C, D]``), as a read-only ``float32 [C, D]`` array: row ``i`` is
  concept ``i``'s vector. Nothing the pickle names is run."""
  path = os.fspath(path)
  obj = _unpickle(path, _VECTORS)
  vectors = _array(path, "the pickle", obj, 2, "f", "one finite float array [C, D]")
  if 0 in vectors.shape:
    raise ValueError(f"{path}: the pickle is {_describe(vectors)}; expected C, D > 0")
  return _frozen(vectors, np.float32)


def _word_list(path: str, field: str, value: Any, kind: type) -> list:
  """``value`` when it is a list of ``kind`` (``int`` excludes ``bool``)."""
  if isinstance(value, list):
    for i, item in enumerate(value):
      if not isinstance(item, kind) or isinstance(item, bool):
        raise ValueError(
          f"{path}: {field}[{i}] is {item!r} of type {type(item).__name__}; expected "
          f"a list of {kind.__name__}"
        )
    return value
  raise ValueError(f"{path}: {field} is {_describe(value)}; expected a list of {kind.__name__}")


def read_concept_vocabulary(path: str | os.PathLike) -> tuple[str, ...]:
  """The concept words of a CVSE ``vocab_*_concepts.pkl`` in id order: a pickled dict with
  the keys ``words`` (``C`` distinct non-empty strings), ``counts`` (``C`` ints) and
  ``poss`` (``C`` strings); returns ``words`` as a tuple. Nothing the pickle names is run."""
  path = os.fspath(path)
  obj = _unpickle(path, _VOCABULARY)
  fields = ("words", "counts", "poss")
  if not isinstance(obj, dict) or set(obj) != set(fields):
    raise ValueError(f"{path}: holds {_describe(obj)}; expected {_VOCABULARY}")
  words = _word_list(path, "words", obj["words"], str)
  for field, kind in (("counts", int), ("poss", str)):
    if len(_word_list(path, field, obj[field], kind)) != len(words):
      raise ValueError(f"{path}: {field} has {len(obj[field])} entries but words has "
                       f"{len(words)}; expected one per word")  # fmt: skip
  _check_words(path, "words", words)
  return tuple(words)


def _check_words(path: str, field: str, words: list[str]) -> None:
  """Raises ``ValueError`` when ``words`` is empty, holds an empty word or a repeated one."""
  if not words:
    raise ValueError(f"{path}: {field} is empty; expected at least one concept")
  seen: dict[str, int] = {}
  for i, word in enumerate(words):
    if not word:
      raise ValueError(f"{path}: {field}[{i}] is empty; expected non-empty words")
    if word in seen:
      raise ValueError(
        f"{path}: {field} holds {word!r} at {seen[word]} and {i}; expected each word once"
      )
    seen[word] = i


def read_category_concepts(path: str | os.PathLike) -> tuple[str, ...]:
  """The concept words of a CVSE ``category_concepts.json`` in id order: a JSON object of
  word -> id whose ids are ``0, 1, ..., C-1`` in file order (``data.py`` uses the position
  in file order as the id, so an id out of place is refused rather than reordered)."""
  path = os.fspath(path)
  _require_file(path, _CATEGORIES)
  data = fileio.read_json(path, hint=f"; expected {_CATEGORIES}")
  if not isinstance(data, dict):
    raise ValueError(f"{path}: holds a JSON {fileio.json_kind(data)}; expected {_CATEGORIES}")
  for position, (word, i) in enumerate(data.items()):
    if not isinstance(i, int) or isinstance(i, bool) or i != position:
      raise ValueError(
        f"{path}: {word!r} has the id {i!r} at position {position}; expected {_CATEGORIES}"
      )
  words = list(data)
  _check_words(path, "the object", words)
  return tuple(words)


def read_concept_labels(
  path: str | os.PathLike, num_concepts: int | None = None
) -> Mapping[int, tuple[int, ...]]:
  """The per-image concept labels of a CVSE ``all_*_concept_label.json``: a JSON array of
  objects with exactly ``img_id`` (a decimal string, each image once) and
  ``concept_labels`` (a non-empty array of ids ``>= 0``, and ``< num_concepts`` when
  given). Returns image id (``int``) -> its labels, sorted and without repeats (the
  multi-hot target ``data.py`` builds from them), in file order."""
  path = os.fspath(path)
  _require_file(path, _LABELS)
  data = fileio.read_json(path, hint=f"; expected {_LABELS}")
  if not isinstance(data, list):
    raise ValueError(f"{path}: holds a JSON {fileio.json_kind(data)}; expected {_LABELS}")
  labels: dict[int, tuple[int, ...]] = {}
  bound = "" if num_concepts is None else f" and < {num_concepts}"
  for n, item in enumerate(data):
    where = f"{path}: item {n}"
    if not isinstance(item, dict) or set(item) != {"img_id", "concept_labels"}:
      shown = list(item) if isinstance(item, dict) else f"a JSON {fileio.json_kind(item)}"
      raise ValueError(f"{where} is {shown}; expected {_LABELS}")
    img_id, ids = item["img_id"], item["concept_labels"]
    if not isinstance(img_id, str) or not _DECIMAL_RE.fullmatch(img_id):
      raise ValueError(f"{where} has the img_id {img_id!r}; expected a decimal string such as '0'")
    if int(img_id) in labels:
      raise ValueError(f"{where} repeats the img_id {img_id!r}; expected each image once")
    if not isinstance(ids, list) or not ids:
      raise ValueError(f"{where} has the concept_labels {ids!r}; expected a non-empty array of ids")
    for label in ids:
      out_of_range = num_concepts is not None and isinstance(label, int) and label >= num_concepts
      if not isinstance(label, int) or isinstance(label, bool) or label < 0 or out_of_range:
        raise ValueError(
          f"{where} (img_id {img_id!r}) has the concept label {label!r}; expected integer "
          f"ids >= 0{bound}"
        )
    labels[int(img_id)] = tuple(sorted(set(ids)))
  return types.MappingProxyType(labels)


@dataclasses.dataclass(frozen=True)
class OfficialConcepts:
  """CVSE's concept files of one dataset, read and cross-checked by
  :func:`read_official_concepts`. ``C`` is the same in every field.

  Attributes:
    statistics: the co-occurrence statistics (:func:`read_concept_statistics`).
    vectors: ``float32 [C, D]`` word vectors (:func:`read_concept_vectors`).
    words: the concept words in id order (:func:`read_category_concepts`), equal to the
      pickled vocabulary's (:func:`read_concept_vocabulary`).
    labels: image id -> its concept ids in ``[0, C)`` (:func:`read_concept_labels`).
  """

  statistics: ConceptStatistics
  vectors: np.ndarray
  words: tuple[str, ...]
  labels: Mapping[int, tuple[int, ...]]

  @property
  def num_concepts(self) -> int:
    """``C``, the number of concepts."""
    return len(self.words)


def read_official_concepts(folder: str | os.PathLike, dataset: str = "f30k") -> OfficialConcepts:
  """Every concept file of CVSE's ``dataset`` in ``folder`` (for ``f30k``:
  ``f30k_adj_concepts.pkl``, ``f30k_concepts_glove_word2vec.pkl``,
  ``vocab_f30k_concepts.pkl``, ``all_f30k_concept_label.json``, ``category_concepts.json``),
  read by the readers above and checked to agree: the same ``C`` in every file, the same
  words in the vocabulary pickle and ``category_concepts.json``, labels in ``[0, C)``."""
  folder = os.fspath(folder)
  if dataset not in _FILES:
    raise ValueError(f"dataset {dataset!r} has no known CVSE concept files; expected one of "
                     f"{sorted(_FILES)}")  # fmt: skip
  files = {key: os.path.join(folder, name) for key, name in _FILES[dataset].items()}
  words = read_category_concepts(files["categories"])
  c = len(words)
  source = f"{c} concepts in {files['categories']}"
  vocabulary = read_concept_vocabulary(files["vocabulary"])
  if vocabulary != words:
    i = next((i for i, (a, b) in enumerate(zip(vocabulary, words)) if a != b), None)
    detail = (
      f"{len(vocabulary)} words" if i is None else f"word {i} {vocabulary[i]!r} (not {words[i]!r})"
    )
    raise ValueError(f"{files['vocabulary']}: has {detail}; expected the {source}, in order")
  statistics = read_concept_statistics(files["statistics"])
  if statistics.num_concepts != c:
    raise ValueError(f"{files['statistics']}: has {statistics.num_concepts} concepts; "
                     f"expected the {source}")  # fmt: skip
  vectors = read_concept_vectors(files["vectors"])
  if vectors.shape[0] != c:
    raise ValueError(f"{files['vectors']}: has {vectors.shape[0]} vectors; expected one for "
                     f"each of the {source}")  # fmt: skip
  labels = read_concept_labels(files["labels"], num_concepts=c)
  return OfficialConcepts(statistics, vectors, words, labels)
