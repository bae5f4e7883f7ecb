"""The WordPiece vocabulary of a run (truncation, padding, its record) and the training
batch augmentation's rules."""

import json

import numpy as np
import pytest

from jitr.data.train_augment import TrainAugment, drop_region_mask
from jitr.data.vocab import build_vocab
from jitr.data.wordpiece_vocab import (
  CaptionWords,
  WordPieceVocab,
  check_same_wordpiece,
  load_workdir_vocab,
)
from tests.bert_folder import write_bert_folder


@pytest.fixture
def vocab(tmp_path):
  return WordPieceVocab.from_folder(str(write_bert_folder(tmp_path / "bert", ["a", "red", "dog"])))


def test_long_captions_keep_sep_last_and_pad_with_pad(vocab):
  tok = vocab.tokenizer
  ids, lengths = vocab.encode_batch(["a red dog", "a red red red dog"], max_len=5)
  red, dog = tok.vocab["red"], tok.vocab["dog"]
  assert lengths.tolist() == [5, 5]
  assert ids[0].tolist() == [tok.cls_id, tok.vocab["a"], red, dog, tok.sep_id]
  assert ids[1].tolist() == [tok.cls_id, tok.vocab["a"], red, red, tok.sep_id]
  ids, lengths = vocab.encode_batch(["dog", ""])
  assert ids.tolist() == [[tok.cls_id, dog, tok.sep_id], [tok.cls_id, tok.sep_id, tok.pad_id]]
  with pytest.raises(ValueError, match="max_len=1 too small"):
    vocab.encode_batch(["dog"], max_len=1)


def test_saved_vocabulary_records_its_file(vocab, tmp_path):
  vocab.save(tmp_path / "vocab.json")
  saved = json.loads((tmp_path / "vocab.json").read_text())
  assert saved["words"] == list(vocab.words) and saved["wordpiece"]["sha256"] == vocab.sha256
  check_same_wordpiece(vocab, str(tmp_path / "vocab.json"))
  again = load_workdir_vocab(str(tmp_path / "vocab.json"))  # a teacher's or init_from's
  assert again == vocab and again.sha256 == vocab.sha256
  assert np.array_equal(again.encode_batch(["red dogs"])[0], vocab.encode_batch(["red dogs"])[0])
  words = build_vocab(["a red dog"])
  words.save(tmp_path / "words.json")
  assert load_workdir_vocab(str(tmp_path / "words.json")) == words
  saved["wordpiece"]["sha256"] = "0" * 64
  (tmp_path / "vocab.json").write_text(json.dumps(saved))
  with pytest.raises(ValueError, match=r"vocab.txt: not the vocabulary the run was trained with"):
    check_same_wordpiece(vocab, str(tmp_path / "vocab.json"))


def test_caption_words_and_word_augmentation(vocab):
  words = CaptionWords.build(vocab.tokenizer, ["a red dog", "dogs"])
  tok = vocab.tokenizer
  assert [w.tolist() for w in words.of(0)] == [
    [tok.vocab["a"]],
    [tok.vocab["red"]],
    [tok.vocab["dog"]],
  ]
  assert [w.tolist() for w in words.of(1)] == [[tok.vocab["dog"], tok.vocab["##s"]]]
  tokens, lengths = vocab.encode_batch(["a red dog", "dogs"], max_len=6)
  batch = {"tokens": tokens, "lengths": lengths, "caption_indices": np.arange(2)}
  augment = TrainAugment(0.99, 0.0, tok, words, 6)
  out = augment(batch, np.random.default_rng(0))
  assert (out["lengths"] <= lengths).all() and (out["tokens"][:, 0] == tok.cls_id).all()
  assert not np.array_equal(out["tokens"], tokens) and "image_mask" not in out
  same = TrainAugment(0.0, 0.0, tok, words, 6)(batch, np.random.default_rng(0))
  assert np.array_equal(same["tokens"], tokens)


def test_region_drop_clears_the_mask_and_never_empties_a_row():
  images = np.zeros((3, 4, 2), np.float32)
  mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 1]], bool)

  class Draws:
    def random(self, shape):
      return np.array([[0.1, 0.5, 0.2, 0.9], [0.1, 0.2, 0.9, 0.9], [0.3, 0.3, 0.3, 0.3]])

  kept = drop_region_mask({"images": images, "image_mask": mask}, Draws(), 0.2)
  assert kept.tolist() == [[0, 1, 0, 1], [1, 1, 0, 0], [1, 1, 1, 1]]
  kept = drop_region_mask({"images": images}, Draws(), 0.25)  # no mask: every region valid
  assert kept.tolist() == [[0, 1, 0, 1], [0, 0, 1, 1], [1, 1, 1, 1]]
  with pytest.raises(ValueError, match=r"^config.image.region_drop: the images have shape"):
    drop_region_mask({"images": np.zeros((3, 8))}, Draws(), 0.2)
