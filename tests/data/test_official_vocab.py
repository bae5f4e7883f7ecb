"""Official SGRAF / VSE++ / VSRN / CVSE vocabularies: both formats, Python 2 and 3 pickles,
ids kept, refused globals run nothing, one error per bad file, the real files."""

from __future__ import annotations

import json
import os
import pathlib
import pickle
import pickletools
import struct
import sys
import types

import pytest

from jitr.data import official_vocab
from jitr.data import vocab as vocab_lib
from tests.data_folders import data_folder

WORDS = ("<pad>", "<start>", "<end>", "<unk>", "dog", "café", "t-shirt")
PICKLED = "a pickled VSE++/VSRN/CVSE Vocabulary with word2idx, idx2word and idx"
SGRAF = "a SGRAF vocabulary JSON object with word2idx, idx2word and idx"
REFUSAL = "an official vocabulary holds only a Vocabulary of word dictionaries"


def tables(words=WORDS) -> tuple[dict, dict, int]:
  """``word2idx``, ``idx2word`` and ``idx`` of ``words`` in id order, word2idx shuffled."""
  word2idx = {w: i for i, w in reversed(list(enumerate(words)))}
  return word2idx, dict(enumerate(words)), len(words)


def write(path: pathlib.Path, data: bytes) -> str:
  path.write_bytes(data)
  return str(path)


def write_json(path: pathlib.Path, value) -> str:
  return write(path, json.dumps(value, ensure_ascii=False).encode("utf-8"))


def sgraf_json(words=WORDS) -> dict:
  """A SGRAF vocabulary object: ``idx2word`` keyed by decimal strings."""
  word2idx, idx2word, idx = tables(words)
  return {"idx2word": {str(i): w for i, w in idx2word.items()}, "word2idx": word2idx, "idx": idx}


@pytest.fixture
def vocabulary_class(monkeypatch):
  """VSE++'s ``Vocabulary``, importable as ``vocab.Vocabulary`` while a test runs."""

  class Vocabulary:
    def __init__(self, word2idx, idx2word, idx):
      self.word2idx, self.idx2word, self.idx = word2idx, idx2word, idx

  module = types.ModuleType("vocab")
  Vocabulary.__module__, Vocabulary.__qualname__ = "vocab", "Vocabulary"
  module.Vocabulary = Vocabulary
  monkeypatch.setitem(sys.modules, "vocab", module)
  return Vocabulary


def pickle_globals(data: bytes) -> list[str]:
  """The ``module name`` of every GLOBAL / STACK_GLOBAL opcode of a pickle, in order."""
  out, strings = [], []
  for op, arg, _ in pickletools.genops(data):
    if op.name == "GLOBAL":
      out.append(arg)
    elif op.name == "STACK_GLOBAL":
      out.append(" ".join(strings[-2:]))
    elif isinstance(arg, str):
      strings.append(arg)
  return out


# Python 2 pickles, written opcode by opcode as Python 2's pickle writes them: ``str`` (bytes)
# for the special tokens and attribute names, ``unicode`` for the other words.


def py2_protocol2(words=WORDS, module=b"__main__") -> bytes:
  """``pickle.dump(vocab, f, 2)`` of VSE++'s ``Vocabulary`` under Python 2."""

  def text(w):
    if w in vocab_lib.SPECIAL_TOKENS or w in ("idx", "idx2word", "word2idx"):
      raw = w.encode("ascii")
      return b"U" + bytes([len(raw)]) + raw  # SHORT_BINSTRING
    raw = w.encode("utf-8")
    return b"X" + struct.pack("<I", len(raw)) + raw  # BINUNICODE

  def integer(i):
    return b"K" + bytes([i]) if i < 256 else b"M" + struct.pack("<H", i)

  idx2word = b"".join(integer(i) + text(w) for i, w in enumerate(words))
  word2idx = b"".join(text(w) + integer(i) for i, w in enumerate(words))
  return (
    b"\x80\x02c" + module + b"\nVocabulary\n)\x81}(" + text("idx2word") + b"}(" + idx2word
    + b"u" + text("word2idx") + b"}(" + word2idx + b"u" + text("idx") + integer(len(words))
    + b"ub."
  )  # fmt: skip


def py2_protocol0(words=WORDS) -> bytes:
  """``pickle.dump(vocab, f)`` (protocol 0) under Python 2, words as UTF-8 ``str``
  except the last, ``unicode``."""

  def text(w, unicode=False):
    if unicode:
      return b"V" + w.encode("raw-unicode-escape") + b"\n"
    raw = w.encode("utf-8")
    escaped = b"".join(
      bytes([c]) if 32 <= c < 127 and c not in b"'\\" else b"\\x%02x" % c for c in raw
    )
    return b"S'" + escaped + b"'\n"

  last = len(words) - 1
  idx2word = b"".join(b"I%d\n" % i + text(w, i == last) + b"s" for i, w in enumerate(words))
  word2idx = b"".join(text(w, i == last) + b"I%d\ns" % i for i, w in enumerate(words))
  return (
    b"ccopy_reg\n_reconstructor\n(c__main__\nVocabulary\nc__builtin__\nobject\nNtR(d"
    + text("idx2word") + b"(d" + idx2word + b"s" + text("word2idx") + b"(d" + word2idx + b"s"
    + text("idx") + b"I%d\ns" % len(words) + b"b."
  )  # fmt: skip


# Both formats, the ids kept


def test_sgraf_json_keeps_the_ids(tmp_path):
  path = write_json(tmp_path / "f30k_precomp_vocab.json", sgraf_json())
  for read in (official_vocab.read_sgraf_vocab, official_vocab.read_official_vocab):
    vocab = read(path)
    assert vocab.words == WORDS
    assert vocab.id("café") == 5 and vocab.id("t-shirt") == 6
    assert vocab.tokenizer == "nltk"  # the official code's nltk.word_tokenize


@pytest.mark.parametrize("module", ["vocab", "__main__"])
@pytest.mark.parametrize("protocol", [0, 1, 2, pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL])
def test_python3_pickles_of_a_vocabulary(tmp_path, monkeypatch, vocabulary_class, module, protocol):
  if module == "__main__":
    vocabulary_class.__module__ = "__main__"
    monkeypatch.setattr(sys.modules["__main__"], "Vocabulary", vocabulary_class, raising=False)
  data = pickle.dumps(vocabulary_class(*tables()), protocol)
  assert f"{module} Vocabulary" in pickle_globals(data)
  path = write(tmp_path / "vocab.pkl", data)
  for read in (official_vocab.read_pickled_vocab, official_vocab.read_official_vocab):
    assert read(path).words == WORDS


@pytest.mark.parametrize("fix_imports", [True, False])
def test_protocol_0_names_the_reconstructor_either_way(tmp_path, vocabulary_class, fix_imports):
  data = pickle.dumps(vocabulary_class(*tables()), 0, fix_imports=fix_imports)
  old = ("copy_reg _reconstructor", "vocab Vocabulary", "__builtin__ object")
  new = ("copyreg _reconstructor", "vocab Vocabulary", "builtins object")
  assert tuple(pickle_globals(data)) == (old if fix_imports else new)
  assert official_vocab.read_official_vocab(write(tmp_path / "v.pkl", data)).words == WORDS


def test_python2_protocol_2_pickle_like_the_official_files(tmp_path):
  data = py2_protocol2()
  assert pickle_globals(data) == ["__main__ Vocabulary"]
  ops = {op.name for op, _, _ in pickletools.genops(data)}
  assert {"SHORT_BINSTRING", "BINUNICODE", "NEWOBJ", "BUILD"} <= ops
  vocab = official_vocab.read_official_vocab(write(tmp_path / "f30k_precomp_vocab.pkl", data))
  assert vocab.words == WORDS and vocab.tokenizer == "nltk"


def test_a_run_vocabulary_file_keeps_its_tokenizer(tmp_path):
  official = write_json(tmp_path / "f30k_precomp_vocab.json", sgraf_json())
  assert official_vocab.read_vocab_file(official).tokenizer == "nltk"
  for tokenizer in ("jitr", "nltk"):
    vocab_lib.Vocab(WORDS, tokenizer).save(tmp_path / "vocab.json")
    assert official_vocab.read_vocab_file(tmp_path / "vocab.json") == vocab_lib.Vocab(
      WORDS, tokenizer
    )
  old = write_json(tmp_path / "old.json", {"words": list(WORDS)})  # before the field
  assert official_vocab.read_vocab_file(old).tokenizer == "jitr"


def test_python2_protocol_0_pickle_with_utf8_str_words(tmp_path):
  data = py2_protocol0()
  assert data.startswith(
    b"ccopy_reg\n_reconstructor\n(c__main__\nVocabulary\nc__builtin__\nobject\n"
  )
  assert b"S'caf\\xc3\\xa9'" in data  # a Python 2 str holding UTF-8 bytes
  vocab = official_vocab.read_official_vocab(write(tmp_path / "vocab.pkl", data))
  assert vocab.words == WORDS


def test_more_than_255_words(tmp_path):
  words = vocab_lib.SPECIAL_TOKENS + tuple(f"w{i}" for i in range(300))
  path = write(tmp_path / "big.pkl", py2_protocol2(words))
  assert official_vocab.read_official_vocab(path).words == words


# Refused globals: one error line, nothing run


class _System:
  def __init__(self, marker):
    self.marker = marker

  def __reduce__(self):
    return os.system, (f"touch {self.marker}",)


class _Exec:
  def __init__(self, marker):
    self.marker = marker

  def __reduce__(self):
    return exec, (f"open({str(self.marker)!r}, 'w').write('ran')",)


@pytest.mark.parametrize("protocol", [0, 2, pickle.DEFAULT_PROTOCOL])
@pytest.mark.parametrize("evil", [_System, _Exec], ids=["os.system", "exec"])
@pytest.mark.parametrize("nested", [False, True], ids=["alone", "inside-a-vocabulary"])
def test_a_refused_global_runs_nothing(tmp_path, vocabulary_class, evil, nested, protocol):
  marker = tmp_path / "side_effect"
  obj = evil(marker)
  if nested:
    word2idx, idx2word, idx = tables()
    obj = vocabulary_class({**word2idx, "dog": obj}, idx2word, idx)
  builtins = "__builtin__" if protocol < 3 else "builtins"
  refused = {_System: f"{os.system.__module__}.system", _Exec: f"{builtins}.exec"}[evil]
  path = write(tmp_path / "vocab.pkl", pickle.dumps(obj, protocol))
  for read in (official_vocab.read_pickled_vocab, official_vocab.read_official_vocab):
    with pytest.raises(ValueError) as err:
      read(path)
    assert str(err.value) == f"{path}: refusing the pickled global {refused}; {REFUSAL}"
  assert not marker.exists()


@pytest.mark.parametrize(
  "data, refused",
  [
    (b"c__builtin__\neval\n(S'1'\ntR.", "__builtin__.eval"),
    (b"\x80\x02cevil\nVocabulary\n)\x81.", "evil.Vocabulary"),
    (b"\x80\x02cvocab\nOther\n)\x81.", "vocab.Other"),
    (b"\x80\x02cnumpy.core.multiarray\n_reconstruct\n.", "numpy.core.multiarray._reconstruct"),
  ],
)
def test_refused_globals_are_named(tmp_path, data, refused):
  path = write(tmp_path / "f.pkl", data)
  with pytest.raises(ValueError) as err:
    official_vocab.read_official_vocab(path)
  assert str(err.value) == f"{path}: refusing the pickled global {refused}; {REFUSAL}"


def test_the_reconstructor_rebuilds_only_a_vocabulary(tmp_path):
  data = b"ccopy_reg\n_reconstructor\n(c__builtin__\nobject\nc__builtin__\nobject\nNtR."
  path = write(tmp_path / "f.pkl", data)
  with pytest.raises(ValueError) as err:
    official_vocab.read_official_vocab(path)
  assert str(err.value) == (
    f"{path}: refusing copy_reg._reconstructor(<class 'object'>, <class 'object'>, None); "
    "only a Vocabulary (object base, no state) is rebuilt"
  )


def test_a_persistent_id_is_refused(tmp_path):
  path = write(tmp_path / "f.pkl", b"\x80\x02X\x01\x00\x00\x00aQ.")
  with pytest.raises(ValueError) as err:
    official_vocab.read_official_vocab(path)
  assert str(err.value) == f"{path}: refusing a pickled persistent id; {REFUSAL}"


# One error per bad file


def mutate(change):
  """A SGRAF object of ``WORDS`` after ``change(obj)``."""
  obj = sgraf_json()
  change(obj)
  return obj


@pytest.mark.parametrize(
  "obj, message",
  [
    (
      mutate(lambda o: o["idx2word"].pop("4")),
      "idx2word has 6 ids but not id 4; expected the ids 0..5",
    ),
    (
      mutate(lambda o: o["word2idx"].update({"dog": 5, "café": 4})),
      "word2idx and idx2word disagree: idx2word[4] = 'dog' but word2idx['dog'] = 5; "
      "expected the same id both ways",
    ),
    (
      mutate(lambda o: o["word2idx"].pop("dog")),
      "word2idx and idx2word disagree: idx2word[4] = 'dog' but word2idx['dog'] = missing; "
      "expected the same id both ways",
    ),
    (
      mutate(lambda o: o["word2idx"].update({"cat": 2})),
      "word2idx and idx2word disagree: word2idx['cat'] = 2 but idx2word[2] = '<end>'; "
      "expected the same id both ways",
    ),
    (mutate(lambda o: o.update(idx=8)), "idx = 8 but the vocabulary has 7 words; expected idx = 7"),
    (
      sgraf_json(("<unk>", "<pad>", "<start>", "<end>", "dog")),
      "ids 0..3 are ('<unk>', '<pad>', '<start>', '<end>'); expected "
      "('<pad>', '<start>', '<end>', '<unk>') (the official ids are kept, never remapped)",
    ),
    ([1, 2], f"holds a JSON array; expected {SGRAF}"),
    (mutate(lambda o: o.pop("idx2word")), f"no field 'idx2word'; expected {SGRAF}"),
    (
      mutate(lambda o: o["idx2word"].update({"04": "x"})),
      "idx2word has the key '04'; expected decimal ids such as '0'",
    ),
    (
      mutate(lambda o: o.update(idx2word=list(WORDS))),
      "idx2word is a list; expected an object of id -> word",
    ),
    (
      mutate(lambda o: o["word2idx"].update({"dog": "4"})),
      "word2idx['dog'] is '4' of type str; expected an integer",
    ),
    (mutate(lambda o: o.update(idx=True)), "idx is True of type bool; expected an integer"),
  ],
)
def test_bad_sgraf_files(tmp_path, obj, message):
  path = write_json(tmp_path / "vocab.json", obj)
  for read in (official_vocab.read_sgraf_vocab, official_vocab.read_official_vocab):
    with pytest.raises(ValueError) as err:
      read(path)
    assert str(err.value) == f"{path}: {message}"


def test_a_truncated_json_file(tmp_path):
  text = json.dumps(sgraf_json())
  path = write(tmp_path / "vocab.json", text[:40].encode())
  with pytest.raises(ValueError) as err:
    official_vocab.read_official_vocab(path)
  assert str(err.value).startswith(f"{path}:1: not valid JSON (")
  assert str(err.value).endswith(f"; expected {SGRAF}")


def test_every_prefix_of_a_pickle_is_truncated(tmp_path):
  data = py2_protocol2()
  path = tmp_path / "vocab.pkl"
  for end in range(1, len(data)):
    write(path, data[:end])
    with pytest.raises(ValueError) as err:
      official_vocab.read_official_vocab(path)
    assert str(err.value) == (
      f"{path}: truncated pickle (the file ends before the pickle does); expected {PICKLED}"
    )


def test_pickled_vocabulary_with_the_same_checks(tmp_path):
  data = py2_protocol2(("<pad>", "<start>", "<unk>", "<end>", "dog"))
  path = write(tmp_path / "vocab.pkl", data)
  with pytest.raises(ValueError) as err:
    official_vocab.read_pickled_vocab(path)
  assert str(err.value) == (
    f"{path}: ids 0..3 are ('<pad>', '<start>', '<unk>', '<end>'); expected "
    "('<pad>', '<start>', '<end>', '<unk>') (the official ids are kept, never remapped)"
  )


@pytest.mark.parametrize(
  "data, message",
  [
    (b"\x1f\x8b\x08\x00", f"not a pickle (invalid load key, '\\x1f'.); expected {PICKLED}"),
    (pickle.dumps({"words": ["man"], "counts": [1], "poss": ["OBJ"]}, 3),
     f"holds a dict with the keys ['words', 'counts', 'poss']; expected {PICKLED}"),
    (py2_protocol2() + b"\x00", f"data after the end of the pickle; expected {PICKLED} alone"),
    (py2_protocol2().replace(b"X\x07\x00\x00\x00t-shirt", b"U\x07t\xe9shirt"),
     "a word2idx key holds b't\\xe9shirt', not UTF-8; expected UTF-8 words"),
    (py2_protocol2().replace(b"X\x03\x00\x00\x00dog", b"X\x05\x00\x00\x00<pad>"),
     "word2idx holds '<pad>' twice; expected each word once"),
    (b"\x80\x02c__main__\nVocabulary\n)\x81}b.",
     f"the Vocabulary has no attribute 'word2idx'; expected {PICKLED}"),
    (b"\x80\x02c__main__\nVocabulary\n)\x81]b.",
     "the Vocabulary's state is a list; expected a dict of its attributes word2idx, idx2word "
     "and idx"),
  ],
  ids=["gzip", "cvse-concepts", "trailing", "not-utf8", "bytes-and-str", "no-field", "state"],
)  # fmt: skip
def test_bad_pickles(tmp_path, data, message):
  path = write(tmp_path / "vocab.pkl", data)
  with pytest.raises(ValueError) as err:
    official_vocab.read_official_vocab(path)
  assert str(err.value) == f"{path}: {message}"


def test_empty_and_missing_files(tmp_path):
  path = write(tmp_path / "vocab.pkl", b"")
  with pytest.raises(ValueError) as err:
    official_vocab.read_official_vocab(path)
  assert str(err.value) == f"{path}: empty file; expected {SGRAF}, or {PICKLED}"
  with pytest.raises(ValueError) as err:
    official_vocab.read_pickled_vocab(path)
  assert str(err.value) == f"{path}: empty file; expected {PICKLED}"
  with pytest.raises(FileNotFoundError, match="no such file; expected a SGRAF"):
    official_vocab.read_official_vocab(tmp_path / "missing.json")


# The real files


@pytest.fixture(scope="module")
def official() -> pathlib.Path:
  """The official vocabularies (sgraf/, vsepp_vocab/, cvse_f30k/): ``$JITR_OFFICIAL_DATA``
  (see tests/data_folders.py)."""
  return data_folder("JITR_OFFICIAL_DATA", "official", "sgraf", "official vocabularies")


def test_the_official_vocabularies(official):
  sizes = {
    "sgraf/f30k_precomp_vocab.json": 8481,
    "sgraf/coco_precomp_vocab.json": 11353,
    "vsepp_vocab/f8k_precomp_vocab.pkl": 3178,
    "vsepp_vocab/f30k_precomp_vocab.pkl": 8481,
    "vsepp_vocab/coco_precomp_vocab.pkl": 10006,
  }
  vocabs = {name: official_vocab.read_official_vocab(official / name) for name in sizes}
  assert {name: len(v) for name, v in vocabs.items()} == sizes
  for v in vocabs.values():
    assert v.words[:4] == vocab_lib.SPECIAL_TOKENS
  # nltk tokens that jitr's tokenizer splits are kept with their official ids
  assert vocabs["sgraf/coco_precomp_vocab.json"].words[4] == "wrought-iron"
  for name in sizes:
    if name.endswith(".pkl"):
      data = (official / name).read_bytes()
      assert data[:2] == b"\x80\x02" and pickle_globals(data) == ["__main__ Vocabulary"]
  # F30K: SGRAF's JSON and VSE++'s pickle are the same vocabulary, id for id
  assert vocabs["sgraf/f30k_precomp_vocab.json"] == vocabs["vsepp_vocab/f30k_precomp_vocab.pkl"]
  # COCO: SGRAF's holds 1347 more words, and the shared words have other ids
  coco_json = vocabs["sgraf/coco_precomp_vocab.json"].words
  coco_pkl = vocabs["vsepp_vocab/coco_precomp_vocab.pkl"].words
  assert set(coco_pkl) < set(coco_json) and len(coco_json) - len(coco_pkl) == 1347
  assert coco_json[4:7] == ("wrought-iron", "woods", "hanging")
  assert coco_pkl[4:6] == ("woods", "hanging")


def test_the_cvse_concept_list_is_not_a_word_vocabulary(official):
  path = official / "cvse_f30k" / "vocab_f30k_concepts.pkl"
  with pytest.raises(ValueError) as err:
    official_vocab.read_official_vocab(path)
  assert str(err.value) == (
    f"{path}: holds a dict with the keys ['words', 'counts', 'poss']; expected {PICKLED}"
  )
