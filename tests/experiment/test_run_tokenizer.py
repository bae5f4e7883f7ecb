"""``config.text.tokenizer``: the tokenizer of the vocabulary a run builds, what a vocabulary
file of the other one makes of it (a one-line refusal), the resolved name ``config.json``
records, and a precomp folder's captions encoded as the official code reads them: each
split tokenised once, captions never cut."""

from __future__ import annotations

import json

import ml_collections
import numpy as np
import pytest

from configs import default, paper
from jitr.data import pairs
from jitr.data import vocab as vocab_lib
from jitr.experiment import loaded_data
from jitr.experiment.loaded_data import load_data
from jitr.experiment.run_config import check_train_config, resolved_config
from jitr.experiment.run_tokenizer import with_official_tokenizer
from tests.bert_folder import write_bert_folder
from tests.file_fixtures import precomp_config, write_precomp

# Captions with what the two tokenizers split apart: a final ".", "'s", a hyphen.
CAPTIONS = (
  "A dog's T-shirt is red.",
  "Two dogs run on the grass.",
  "A cat sits on a mat, in the sun.",
  "The black-and-white dog's ball.",
  "A man in a red T-shirt runs.",
)
LONG = " ".join(["dog"] * 60) + "."  # 61 words: longer than max_caption_len


def official_json(path, words) -> str:
  """An official SGRAF vocabulary file of ``words``."""
  data = {
    "word2idx": {w: i for i, w in enumerate(words)},
    "idx2word": {str(i): w for i, w in enumerate(words)},
    "idx": len(words),
  }
  path.write_text(json.dumps(data))
  return str(path)


def with_text(config, **text) -> ml_collections.ConfigDict:
  config = config.copy_and_resolve_references()
  for name, value in text.items():
    config.text[name] = value
  return config


@pytest.fixture
def folder(tmp_path):
  """A precomp root whose f30k_precomp captions have punctuation, one of them 61 words."""
  root = tmp_path / "precomp"
  data = write_precomp(root, n_images=4, n_eval=2)
  for split, n in (("train", 4), ("dev", 2), ("test", 2)):
    caps = [CAPTIONS[i % len(CAPTIONS)] for i in range(5 * n)]
    caps[1] = LONG
    (data / f"{split}_caps.txt").write_text("\n".join(caps) + "\n")
  return root


def test_the_default_follows_the_vocabulary(tmp_path):
  config = default.get_config()
  assert config.text.tokenizer == ""
  assert resolved_config(config).text.tokenizer == "jitr"
  assert resolved_config(with_text(config, tokenizer="nltk")).text.tokenizer == "nltk"
  words = [*vocab_lib.SPECIAL_TOKENS, "dog"]
  config.vocab_file = official_json(tmp_path / "f30k_precomp_vocab.json", words)
  assert resolved_config(config).text.tokenizer == "nltk"
  vocab_lib.Vocab(words, "nltk").save(tmp_path / "vocab.json")
  config.vocab_file = str(tmp_path / "vocab.json")
  assert resolved_config(config).text.tokenizer == "nltk"
  vocab_lib.Vocab(words).save(tmp_path / "vocab.json")
  assert resolved_config(config).text.tokenizer == "jitr"
  config.vocab_file = str(tmp_path / "missing.json")
  with pytest.raises(ValueError) as err:
    resolved_config(config)
  assert str(err.value).startswith(f"config.vocab_file: {tmp_path / 'missing.json'}: no such")


@pytest.mark.parametrize(
  ("value", "message"),
  [
    (
      "spacy",
      "config.text.tokenizer: expected one of '', 'jitr', 'nltk' ('' follows the "
      "vocabulary), got 'spacy'",
    ),
    (
      None,
      "config.text.tokenizer: expected one of '', 'jitr', 'nltk' ('' follows the "
      "vocabulary), got None",
    ),
  ],
)
def test_a_tokenizer_that_is_not_one_is_one_line(value, message):
  raw = default.get_config().to_dict()
  raw["text"]["tokenizer"] = value
  with pytest.raises(ValueError) as err:
    check_train_config(ml_collections.ConfigDict(raw))
  assert str(err.value) == message


def test_wordpiece_captions_take_no_word_tokenizer(tmp_path):
  config = paper.get_config("f30k,vseinf,triplet")
  config.precomp_root = "/data/precomp"
  config.text.pretrained = str(write_bert_folder(tmp_path / "bert"))
  check_train_config(config)
  assert resolved_config(config).text.tokenizer == ""  # WordPiece: no word tokenizer
  with pytest.raises(ValueError) as err:
    check_train_config(with_text(config, tokenizer="nltk"))
  assert str(err.value) == (
    "config.text.tokenizer: expected '' with config.text.pretrained (WordPiece tokenises the "
    "captions), got 'nltk'"
  )


def test_a_vocabulary_file_of_the_other_tokenizer_is_refused(tmp_path):
  words = [*vocab_lib.SPECIAL_TOKENS, "dog"]
  path = official_json(tmp_path / "f30k_precomp_vocab.json", words)
  config = with_text(default.get_config(), tokenizer="jitr")
  config.vocab_file = path
  with pytest.raises(ValueError) as err:
    loaded_data.run_vocab(config, ["a dog."])
  assert str(err.value) == (
    f"config.text.tokenizer: 'jitr', but config.vocab_file {path} is a vocabulary of the "
    "'nltk' tokenizer; expected 'nltk' or '' (the vocabulary's)"
  )
  vocab, words_built = loaded_data.run_vocab(with_text(config, tokenizer=""), ["a dog."])
  assert vocab.tokenizer == "nltk" and words_built is None
  # jitr-import: the config takes the official vocabulary's tokenizer, or is refused
  assert with_official_tokenizer(default.get_config()).text.tokenizer == "nltk"
  with pytest.raises(ValueError) as err:
    with_official_tokenizer(config)
  assert str(err.value) == (
    "config.text.tokenizer: 'jitr', but an official vocabulary is a vocabulary of the 'nltk' "
    "tokenizer (the official code's); expected 'nltk' or ''"
  )


def test_precomp_captions_are_tokenised_once_per_split_and_never_cut(folder, monkeypatch):
  config = with_text(precomp_config(folder), tokenizer="nltk")
  assert config.max_caption_len == 48
  seen = []
  words = vocab_lib.TOKENIZERS["nltk"]
  monkeypatch.setitem(vocab_lib.TOKENIZERS, "nltk", lambda text: seen.append(text) or words(text))
  data = load_data(resolved_config(config), str(folder / "cache"))
  # the training captions are tokenised once: the vocabulary and the tokens come from one pass
  assert len(seen) == 5 * (4 + 2 + 2)
  vocab = data.vocab
  assert vocab.tokenizer == "nltk"
  assert vocab.words[4:6] == ("dog", ".")  # the long caption's 60 "dog"s, then every "."
  assert {"'s", "t-shirt", "black-and-white", ","} <= set(vocab.words)
  train = data.splits["train"]
  assert train.tokens.shape == (20, 63)  # <start> + 61 words + <end>: uncut
  assert train.lengths[1] == 63 and train.tokens[1, 62] == vocab_lib.END_ID
  first = [vocab.id(w) for w in ["a", "dog", "'s", "t-shirt", "is", "red", "."]]
  assert train.tokens[0, : train.lengths[0]].tolist() == [1, *first, 2]
  # epochs index the encoded split: no caption is tokenised again
  for epoch in range(2):
    for batch in pairs.epoch_batches(train, batch_size=8, seed=0, epoch=epoch, buckets=(8, 16)):
      assert batch["tokens"].shape[1] in (8, 16, 63)
  assert len(seen) == 40
  # jitr's tokenizer: other words, captions cut at max_caption_len with <end> kept last
  data = load_data(resolved_config(precomp_config(folder)), str(folder / "cache"))
  assert data.vocab.tokenizer == "jitr" and "t-shirt" not in data.vocab
  assert data.splits["train"].tokens.shape == (20, 48)
  assert data.splits["train"].tokens[1, 47] == vocab_lib.END_ID
  assert len(seen) == 40
  np.testing.assert_array_equal(data.splits["train"].lengths[[0, 1]], [8, 48])
