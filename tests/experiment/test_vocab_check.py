"""A vocabulary that knows too little of the training captions is refused before anything
is written (``config.vocab_min_coverage``); the coverage counts the words between the
boundary tokens, ``<unk>`` or WordPiece's ``[UNK]``."""

import numpy as np
import pytest

from jitr import experiment
from jitr.data.vocab import Vocab
from jitr.data.vocab_coverage import word_coverage
from tests.file_fixtures import precomp_config, snapshot, write_precomp


def test_coverage_counts_the_words_between_the_boundaries():
  tokens = np.array([[1, 4, 3, 5, 2, 0, 0], [1, 3, 3, 2, 0, 0, 0], [1, 2, 0, 0, 0, 0, 0]])
  coverage, words = word_coverage(tokens, np.array([5, 4, 2]), unknown_id=3)
  assert (coverage, words) == (pytest.approx(2 / 5), 5)
  assert word_coverage(tokens[2:], np.array([2]), unknown_id=3) == (1.0, 0)


def test_a_seven_word_vocabulary_is_refused_before_anything_is_written(tmp_path):
  write_precomp(tmp_path / "data")
  vocab = tmp_path / "vocab.json"
  Vocab(["<pad>", "<start>", "<end>", "<unk>", "a", "dog", "cat"]).save(vocab)
  config = precomp_config(tmp_path / "data")
  config.vocab_file = str(vocab)
  before = snapshot(tmp_path)
  with pytest.raises(ValueError) as err:
    experiment.train_and_evaluate(config, str(tmp_path / "run"))
  message = str(err.value)
  assert message.startswith("config.vocab_min_coverage: the vocabulary (7 tokens) knows ")
  assert message.endswith(
    "under the floor of 50%: the run would learn from the unknown token; use a vocabulary "
    "of these captions (and their tokenizer), or set --config.vocab_min_coverage=0 to "
    "train anyway"
  )
  known = float(message.split(" knows ")[1].split("%")[0])
  assert 20 < known < 40  # 3 of write_precomp's 10 words, drawn alike
  assert snapshot(tmp_path) == before and not (tmp_path / "run").exists()


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_the_floor_is_a_share_in_zero_one(value):
  from configs import default
  from jitr.experiment.run_config import check_train_config

  config = default.get_config()
  config.vocab_min_coverage = value
  with pytest.raises(ValueError, match=r"^config.vocab_min_coverage: expected "):
    check_train_config(config)
