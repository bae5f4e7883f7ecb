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


def test_a_vocabulary_tokenises_with_its_tokenizer():
  caption = "A dog's T-shirt."
  words = ["<pad>", "<start>", "<end>", "<unk>", "a", "dog", "'s", "t-shirt", "."]
  official = vocab_lib.Vocab(words, "nltk")
  assert official.tokens(caption) == ["a", "dog", "'s", "t-shirt", "."]
  assert official.encode(caption) == [1, 4, 5, 6, 7, 8, 2]
  jitr = vocab_lib.Vocab(words)  # the same words, jitr's tokenizer: "dog's", "t", "shirt"
  assert jitr.tokenizer == "jitr" and jitr.encode(caption) == [1, 4, 3, 3, 3, 2]
  assert official != jitr
  assert vocab_lib.vocab_difference(official, jitr) == (
    "(the same 9 words, tokenised by 'nltk' there, 'jitr' here)"
  )
  built = vocab_lib.build_vocab(["A dog's T-shirt.", "a dog."], tokenizer="nltk")
  assert built.tokenizer == "nltk"
  assert built.words[4:] == (".", "a", "dog", "'s", "t-shirt")
  # the batch of texts is the batch of their words
  ids, lengths = built.encode_batch([caption, "a cat"])
  words_ids, words_lengths = built.encode_tokenized([built.tokens(caption), ["a", "cat"]])
  np.testing.assert_array_equal(ids, words_ids)
  np.testing.assert_array_equal(lengths, words_lengths)
  np.testing.assert_array_equal(ids, [[1, 5, 6, 7, 8, 4, 2], [1, 5, 3, 2, 0, 0, 0]])
  with pytest.raises(
    ValueError, match=r"^Vocab: tokenizer 'spacy'; expected one of 'jitr', 'nltk'$"
  ):
    vocab_lib.Vocab(words, "spacy")


def test_the_official_tokenizer_never_cuts_a_caption():
  long_caption = " ".join(["dog"] * 60)
  official = vocab_lib.Vocab([*vocab_lib.SPECIAL_TOKENS, "dog"], "nltk")
  assert vocab_lib.caption_limit(official, 48) is None
  ids, lengths = official.encode_batch(
    [long_caption, "dog"], max_len=vocab_lib.caption_limit(official, 48)
  )
  assert ids.shape == (2, 62) and lengths.tolist() == [62, 3] and ids[0, -1] == vocab_lib.END_ID
  jitr = vocab_lib.Vocab(official.words)
  assert vocab_lib.caption_limit(jitr, 48) == 48
  ids, lengths = jitr.encode_batch([long_caption], max_len=vocab_lib.caption_limit(jitr, 48))
  assert ids.shape == (1, 48) and ids[0, -1] == vocab_lib.END_ID


def test_vocab_json_records_the_tokenizer(tmp_path):
  path = tmp_path / "vocab.json"
  official = vocab_lib.build_vocab(["a dog.", "the dog's ball"], tokenizer="nltk")
  official.save(path)
  saved = json.loads(path.read_text())
  assert saved == {
    "tokenizer": "nltk",
    "words": ["<pad>", "<start>", "<end>", "<unk>", "dog", "'s", ".", "a", "ball", "the"],
  }
  assert vocab_lib.Vocab.load(path) == official
  vocab_lib.build_vocab(["a dog."]).save(path)
  assert json.loads(path.read_text())["tokenizer"] == "jitr"
  # a vocab.json written before the field: jitr's tokenizer
  path.write_text(json.dumps({"words": saved["words"]}))
  old = vocab_lib.Vocab.load(path)
  assert old.tokenizer == "jitr" and old.words == official.words
  path.write_text(json.dumps({"tokenizer": ["nltk"], "words": saved["words"]}))
  with pytest.raises(ValueError) as err:
    vocab_lib.Vocab.load(path)
  assert str(err.value) == (
    f"Vocab.load: {str(path)!r}: tokenizer is ['nltk']; expected one of 'jitr', 'nltk'"
  )
