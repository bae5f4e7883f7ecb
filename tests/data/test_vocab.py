"""Vocabulary: tokenisation, deterministic order, padding, JSON round trip, errors."""

import json

import numpy as np
import pytest

from jitr.data import vocab as vocab_lib


def test_tokenize():
  assert vocab_lib.tokenize("A Red-ball, in the TOP-left corner!") == [
    "a",
    "red",
    "ball",
    "in",
    "the",
    "top",
    "left",
    "corner",
  ]
  assert vocab_lib.tokenize("the dog's 2 toys") == ["the", "dog's", "2", "toys"]


def test_build_vocab_order_and_min_count():
  vocab = vocab_lib.build_vocab(["b a c", "a b", "a d"], min_count=1)
  assert vocab.words == ("<pad>", "<start>", "<end>", "<unk>", "a", "b", "c", "d")
  vocab2 = vocab_lib.build_vocab(["b a c", "a b", "a d"], min_count=2)
  assert vocab2.words[4:] == ("a", "b")
  assert vocab2.id("c") == vocab_lib.UNK_ID and vocab2.id("a") == 4


def test_encode_batch_pads_and_truncates():
  vocab = vocab_lib.build_vocab(["a b c d"])
  ids, lengths = vocab.encode_batch(["a b", "d c b a", "zzz"])
  np.testing.assert_array_equal(ids, [[1, 4, 5, 2, 0, 0], [1, 7, 6, 5, 4, 2], [1, 3, 2, 0, 0, 0]])
  np.testing.assert_array_equal(lengths, [4, 6, 3])
  assert ids.dtype == np.int32 and lengths.dtype == np.int32
  ids, lengths = vocab.encode_batch(["d c b a"], max_len=4)
  np.testing.assert_array_equal(ids, [[1, 7, 6, 2]])
  np.testing.assert_array_equal(lengths, [4])
  ids, lengths = vocab.encode_batch(["a", ""], add_boundaries=False)
  np.testing.assert_array_equal(ids, [[4], [3]])
  assert vocab.decode([1, 7, 6, 2, 0]) == "d c"


def test_save_load_round_trip(tmp_path):
  vocab = vocab_lib.build_vocab(["red ball", "blue box"])
  path = tmp_path / "vocab.json"
  vocab.save(path)
  assert vocab_lib.Vocab.load(path) == vocab
  assert json.loads(path.read_text())["words"][:4] == list(vocab_lib.SPECIAL_TOKENS)
  assert [p.name for p in tmp_path.iterdir()] == ["vocab.json"]  # no temp left


def test_load_errors(tmp_path):
  with pytest.raises(FileNotFoundError, match="no vocabulary file"):
    vocab_lib.Vocab.load(tmp_path / "missing.json")
  bad = tmp_path / "bad.json"
  bad.write_text("{not json")
  with pytest.raises(ValueError, match="bad.json.*not valid JSON"):
    vocab_lib.Vocab.load(bad)
  bad.write_text(json.dumps({"tokens": []}))
  with pytest.raises(ValueError, match=r"must hold \{\"words\""):
    vocab_lib.Vocab.load(bad)
  bad.write_text(json.dumps({"words": ["a", "b"]}))
  with pytest.raises(ValueError, match="first words must be"):
    vocab_lib.Vocab.load(bad)
  bad.write_text(json.dumps({"words": list(vocab_lib.SPECIAL_TOKENS) + ["a", "a"]}))
  with pytest.raises(ValueError, match="duplicated words"):
    vocab_lib.Vocab.load(bad)


def test_bucket_length():
  assert vocab_lib.bucket_length(np.array([3, 9, 5]), (8, 12, 16)) == 12
  assert vocab_lib.bucket_length(np.array([3, 8]), (8, 12, 16)) == 8
  assert vocab_lib.bucket_length(np.array([30]), (8, 12, 16)) == 30
