"""Readers of the vocabularies that official SGRAF, VSRN, VSE++ and CVSE checkpoints come with.

Both formats hold the same three fields: ``word2idx`` (word -> id), ``idx2word`` (id -> word)
and ``idx`` (the number of words).

- SGRAF (``{f30k,coco}_precomp_vocab.json``): a JSON object; ``idx2word``'s keys are the ids
  written as decimal strings (``"0"``, ``"1"``, ...).
- VSE++, VSRN and CVSE (``{f8k,f30k,coco}_precomp_vocab.pkl``): a pickled ``Vocabulary``
  object whose attributes are the three fields. The official files are protocol 2 pickles
  written by Python 2 (class ``__main__.Vocabulary``; the special tokens and the attribute
  names are byte strings, the other words unicode).

A reader returns :class:`jitr.data.vocab.Vocab` with ``vocab.words[i] == idx2word[i]`` and
``vocab.id(w) == word2idx[w]`` for every id ``i`` and word ``w``: the ids a checkpoint's
word-embedding rows were trained with are kept exactly, never renumbered. Its tokenizer is
``"nltk"``, the official code's ``nltk.word_tokenize(caption.lower())``
(:mod:`jitr.data.nltk_tokens`), so captions reach the words with the ids the official
code gives them. The official
files start with ``<pad>, <start>, <end>, <unk>`` at ids 0..3, which :class:`Vocab`
requires; a file with other words there is refused rather than remapped.

Pickles are read by an unpickler that admits only these globals and refuses every other
one before anything it names is called:

- ``Vocabulary`` from the modules ``vocab`` and ``__main__``, read as an inert stand-in
  class that only stores the pickled attributes;
- ``copy_reg._reconstructor`` / ``copyreg._reconstructor`` and ``__builtin__.object`` /
  ``builtins.object``, which protocol 0 and 1 pickles use to rebuild a ``Vocabulary``; the
  reconstructor is replaced by one that only builds the stand-in.

Byte strings (Python 2 ``str``) are decoded as UTF-8. Every problem raises one
``ValueError`` line naming the file and what was expected (``FileNotFoundError`` for a
missing file).
"""

from __future__ import annotations

import json
import os
import pickle
import re
from typing import Any

from jitr import fileio, paths
from jitr.data.vocab import NLTK, SPECIAL_TOKENS, Vocab

_SGRAF = "a SGRAF vocabulary JSON object with word2idx, idx2word and idx"
_PICKLED = "a pickled VSE++/VSRN/CVSE Vocabulary with word2idx, idx2word and idx"
_FIELDS = ("word2idx", "idx2word", "idx")
_VOCABULARY_MODULES = ("vocab", "__main__")
_RECONSTRUCTOR_MODULES = ("copy_reg", "copyreg")
_OBJECT_MODULES = ("__builtin__", "builtins")
_DECIMAL_RE = re.compile(r"0|[1-9][0-9]*")
_JSON_FIRST_BYTES = frozenset(b'{["-0123456789tfn')
_WHITESPACE = b" \t\r\n"
_UTF8_BOM = b"\xef\xbb\xbf"


class _PickledVocabulary:
  """Inert stand-in for a pickled ``Vocabulary``: it only keeps the state it is given."""

  state: Any = None

  def __setstate__(self, state: Any) -> None:
    self.state = state


class _RefusedPickle(ValueError):
  """A pickle asked for something the reader does not admit (the message says what)."""


class _VocabUnpickler(pickle.Unpickler):
  """Unpickler whose ``find_class`` admits only the globals listed in the module docstring."""

  def __init__(self, file: Any, path: str):
    super().__init__(file, encoding="bytes")
    self._path = path

  def find_class(self, module: str, name: str) -> Any:
    if name == "Vocabulary" and module in _VOCABULARY_MODULES:
      return _PickledVocabulary
    if name == "_reconstructor" and module in _RECONSTRUCTOR_MODULES:
      return self._reconstruct
    if name == "object" and module in _OBJECT_MODULES:
      return object
    raise _RefusedPickle(
      f"{self._path}: refusing the pickled global {module}.{name}; an official vocabulary "
      "holds only a Vocabulary of word dictionaries"
    )

  def persistent_load(self, pid: Any) -> Any:
    raise _RefusedPickle(
      f"{self._path}: refusing a pickled persistent id; an official vocabulary holds only "
      "a Vocabulary of word dictionaries"
    )

  def _reconstruct(self, cls: Any, base: Any, state: Any) -> _PickledVocabulary:
    """``copyreg._reconstructor(cls, object, None)`` for the stand-in class only."""
    if cls is not _PickledVocabulary or base is not object or state is not None:
      raise _RefusedPickle(
        f"{self._path}: refusing copy_reg._reconstructor{(cls, base, state)!r}; only a "
        "Vocabulary (object base, no state) is rebuilt"
      )
    return _PickledVocabulary()


def _first_byte(path: str) -> int | None:
  """The first byte of the file after a UTF-8 byte-order mark and ASCII whitespace
  (``None`` for a file holding nothing else)."""
  with paths.open(path, "rb") as f:
    head = f.read(len(_UTF8_BOM))
    if head != _UTF8_BOM:
      f.seek(0)
    while chunk := f.read(1 << 16):
      stripped = chunk.lstrip(_WHITESPACE)
      if stripped:
        return stripped[0]
  return None


def _require_file(path: str, expected: str) -> None:
  """Raises ``FileNotFoundError`` naming ``path`` when it is not a file."""
  if not paths.isfile(path):
    raise FileNotFoundError(f"{path}: no such file; expected {expected}")


def _text(path: str, field: str, value: Any) -> str:
  """``value`` as a ``str``: a ``str`` as is, ``bytes`` decoded as UTF-8."""
  if isinstance(value, bytes):
    try:
      return value.decode("utf-8")
    except UnicodeDecodeError:
      raise ValueError(
        f"{path}: {field} holds {value!r}, not UTF-8; expected UTF-8 words"
      ) from None
  if isinstance(value, str):
    return value
  raise ValueError(
    f"{path}: {field} holds {value!r} of type {type(value).__name__}; expected words"
  )


def _integer(path: str, field: str, value: Any) -> int:
  """``value`` when it is an ``int`` (not a ``bool``)."""
  if isinstance(value, int) and not isinstance(value, bool):
    return value
  raise ValueError(
    f"{path}: {field} is {value!r} of type {type(value).__name__}; expected an integer"
  )


def _dict(path: str, field: str, value: Any, expected: str) -> dict:
  """``value`` when it is a ``dict``."""
  if isinstance(value, dict):
    return value
  raise ValueError(f"{path}: {field} is a {type(value).__name__}; expected {expected}")


def _vocab_from_tables(
  path: str, word2idx: dict[str, int], idx2word: dict[int, str], idx: int
) -> Vocab:
  """The :class:`Vocab` with ``words[i] = idx2word[i]`` (tokenised as the official code:
  ``"nltk"``) after checking, in this order, that
  the ids of ``idx2word`` are ``0..n-1``, that ``word2idx[idx2word[i]] == i`` for every ``i``
  and ``word2idx`` holds no other word, that ``idx == n``, and that ids 0..3 are
  ``<pad>, <start>, <end>, <unk>``; the first failed check raises one ``ValueError``
  naming ``path``."""
  n = len(idx2word)
  ids = set(idx2word)
  if ids != set(range(n)):
    missing = min(set(range(n)) - ids)
    raise ValueError(
      f"{path}: idx2word has {n} ids but not id {missing}; expected the ids 0..{n - 1}"
    )
  for i in range(n):
    word = idx2word[i]
    if word2idx.get(word) != i:
      got = word2idx[word] if word in word2idx else "missing"
      raise ValueError(
        f"{path}: word2idx and idx2word disagree: idx2word[{i}] = {word!r} but "
        f"word2idx[{word!r}] = {got}; expected the same id both ways"
      )
  if len(word2idx) != n:
    known = set(idx2word.values())
    word = next(w for w in word2idx if w not in known)
    j = word2idx[word]
    raise ValueError(
      f"{path}: word2idx and idx2word disagree: word2idx[{word!r}] = {j} but "
      f"idx2word[{j}] = {idx2word.get(j)!r}; expected the same id both ways"
    )
  if idx != n:
    raise ValueError(f"{path}: idx = {idx} but the vocabulary has {n} words; expected idx = {n}")
  words = [idx2word[i] for i in range(n)]
  first = tuple(words[: len(SPECIAL_TOKENS)])
  if first != SPECIAL_TOKENS:
    raise ValueError(
      f"{path}: ids 0..{len(SPECIAL_TOKENS) - 1} are {first}; expected {SPECIAL_TOKENS} "
      "(the official ids are kept, never remapped)"
    )
  return Vocab(words, NLTK)


def read_sgraf_vocab(path: str | os.PathLike) -> Vocab:
  """The vocabulary of a SGRAF ``*_precomp_vocab.json``: a JSON object with ``word2idx``
  (word -> id), ``idx2word`` (decimal id string -> word) and ``idx`` (the word count),
  as :class:`Vocab` with ``words[i] = idx2word[str(i)]``: the ids are kept. The ids must
  be ``0..n-1``, ``word2idx`` its inverse, ``idx == n`` and ids 0..3 ``<pad>, <start>,
  <end>, <unk>``; a file that is not such an object raises one ``ValueError`` naming it."""
  path = os.fspath(path)
  _require_file(path, _SGRAF)
  data = fileio.read_json(path, hint=f"; expected {_SGRAF}")
  if not isinstance(data, dict):
    raise ValueError(f"{path}: holds a JSON {fileio.json_kind(data)}; expected {_SGRAF}")
  missing = [f for f in _FIELDS if f not in data]
  if missing:
    raise ValueError(f"{path}: no field {missing[0]!r}; expected {_SGRAF}")
  word2idx = _dict(path, "word2idx", data["word2idx"], "an object of word -> id")
  idx2word_raw = _dict(path, "idx2word", data["idx2word"], "an object of id -> word")
  idx2word = {}
  for key, word in idx2word_raw.items():
    if not _DECIMAL_RE.fullmatch(key):
      raise ValueError(f"{path}: idx2word has the key {key!r}; expected decimal ids such as '0'")
    idx2word[int(key)] = _text(path, f"idx2word[{key!r}]", word)
  word2idx = {word: _integer(path, f"word2idx[{word!r}]", i) for word, i in word2idx.items()}
  return _vocab_from_tables(path, word2idx, idx2word, _integer(path, "idx", data["idx"]))


def _unpickle(path: str) -> Any:
  """The object pickled in ``path``, read by the restricted unpickler; the whole file
  must be one pickle."""
  if paths.getsize(path) == 0:
    raise ValueError(f"{path}: empty file; expected {_PICKLED}")
  with paths.open(path, "rb") as f:
    try:
      obj = _VocabUnpickler(f, path).load()
    except _RefusedPickle as err:
      raise ValueError(str(err)) from None
    except EOFError:
      raise ValueError(
        f"{path}: truncated pickle (the file ends before the pickle does); expected {_PICKLED}"
      ) from None
    except pickle.UnpicklingError as err:
      if "truncated" in str(err):
        raise ValueError(
          f"{path}: truncated pickle (the file ends before the pickle does); expected {_PICKLED}"
        ) from None
      raise ValueError(f"{path}: not a pickle ({err}); expected {_PICKLED}") from None
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, MemoryError) as err:
      raise ValueError(
        f"{path}: not a readable pickle ({type(err).__name__}: {err}); expected {_PICKLED}"
      ) from None
    if f.read(1):
      raise ValueError(f"{path}: data after the end of the pickle; expected {_PICKLED} alone")
  return obj


def _describe(obj: Any) -> str:
  """A short description of an unpickled object for an error message."""
  if isinstance(obj, dict):
    keys = [k.decode("utf-8", "replace") if isinstance(k, bytes) else k for k in obj]
    return f"a dict with the keys {keys[:6]}"
  return f"a {type(obj).__name__}"


def read_pickled_vocab(path: str | os.PathLike) -> Vocab:
  """The vocabulary of a VSE++/VSRN/CVSE ``*_vocab.pkl``: a pickled ``Vocabulary`` whose
  attributes ``word2idx`` (word -> id), ``idx2word`` (id -> word) and ``idx`` (the word
  count) become :class:`Vocab` with ``words[i] = idx2word[i]``: the ids are kept, with the
  checks of :func:`read_sgraf_vocab`. Nothing the pickle names is run: only the globals
  listed in the module docstring are admitted, any other raises ``ValueError`` before it
  could be called."""
  path = os.fspath(path)
  _require_file(path, _PICKLED)
  obj = _unpickle(path)
  if not isinstance(obj, _PickledVocabulary):
    raise ValueError(f"{path}: holds {_describe(obj)}; expected {_PICKLED}")
  state = obj.state
  if not isinstance(state, dict):
    raise ValueError(
      f"{path}: the Vocabulary's state is a {type(state).__name__}; expected a dict of "
      "its attributes word2idx, idx2word and idx"
    )
  attrs = {_text(path, "an attribute name", k): v for k, v in state.items()}
  missing = [f for f in _FIELDS if f not in attrs]
  if missing:
    raise ValueError(f"{path}: the Vocabulary has no attribute {missing[0]!r}; expected {_PICKLED}")
  word2idx_raw = _dict(path, "word2idx", attrs["word2idx"], "a dict of word -> id")
  idx2word_raw = _dict(path, "idx2word", attrs["idx2word"], "a dict of id -> word")
  word2idx = {}
  for word, i in word2idx_raw.items():
    text = _text(path, "a word2idx key", word)
    if text in word2idx:
      raise ValueError(f"{path}: word2idx holds {text!r} twice; expected each word once")
    word2idx[text] = _integer(path, f"word2idx[{text!r}]", i)
  idx2word = {}
  for i, word in idx2word_raw.items():
    key = _integer(path, "an idx2word key", i)
    idx2word[key] = _text(path, f"idx2word[{key}]", word)
  return _vocab_from_tables(path, word2idx, idx2word, _integer(path, "idx", attrs["idx"]))


def read_official_vocab(path: str | os.PathLike) -> Vocab:
  """The vocabulary of an official SGRAF, VSRN, VSE++ or CVSE file, the format chosen by
  content: a file whose first byte (after whitespace) can begin JSON is read as SGRAF's
  JSON object (:func:`read_sgraf_vocab`), any other as a pickled ``Vocabulary``
  (:func:`read_pickled_vocab`). Ids are kept: ``words[i] = idx2word[i]``."""
  path = os.fspath(path)
  expected = f"{_SGRAF}, or {_PICKLED}"
  _require_file(path, expected)
  first = _first_byte(path)
  if first is None:
    raise ValueError(f"{path}: empty file; expected {expected}")
  if first in _JSON_FIRST_BYTES:
    return read_sgraf_vocab(path)
  return read_pickled_vocab(path)


def read_vocab_file(path: str | os.PathLike) -> Vocab:
  """A run's fixed vocabulary (``config.vocab_file``): jitr's ``vocab.json``
  (``{"words": [...]}``, :meth:`Vocab.load`, with the tokenizer it records) or any official
  file (:func:`read_official_vocab`, tokenised as ``"nltk"``), chosen by content."""
  path = os.fspath(path)
  _require_file(path, f'jitr\'s {{"words": [...]}}, {_SGRAF}, or {_PICKLED}')
  if _first_byte(path) == ord("{"):
    try:
      with paths.open(path, encoding="utf-8") as f:
        is_jitr = "words" in json.load(f)
    except (ValueError, UnicodeDecodeError):
      is_jitr = False  # read_official_vocab names what is wrong with it
    if is_jitr:
      return Vocab.load(path)
  return read_official_vocab(path)
