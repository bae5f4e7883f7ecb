"""End-to-end smoke test of jitr-train on the tiny jitr_shapes config."""

import json
import os

import pytest
from ml_collections import config_flags  # noqa: F401  (absl flags of the app are defined on import)

from configs import default
from jitr.apps import train


@pytest.mark.slow
def test_default_config_trains_end_to_end_on_tiny_shapes(tmp_path):
  config = default.get_config()
  config.shapes_config = "tiny"
  config.graded.relevance = "oracle"
  config.num_epochs = 2
  config.batch_size = 40
  config.model.embed_dim = 32
  config.model.word_dim = 16
  metrics = train.train_and_evaluate(config, str(tmp_path / "run"))
  for key in ("full/rsum", "ndcg/i2t/NDCG@10", "exact/t2i/mAP@R"):
    assert 0.0 <= metrics[key] <= (600.0 if key == "full/rsum" else 100.0)
  assert metrics["full/rsum"] > 0
  with open(tmp_path / "run" / "metrics.json") as f:
    assert json.load(f)["full/rsum"] == pytest.approx(metrics["full/rsum"])
  assert os.path.exists(tmp_path / "run" / "results.md")
  assert os.listdir(tmp_path / "run" / "checkpoints" / "best")
  assert os.listdir(tmp_path / "run" / "tensorboard")


def test_bad_config_is_refused(tmp_path):
  config = default.get_config()
  config.graded.relevance = "bm25"
  with pytest.raises(ValueError, match="config.graded.relevance"):
    train.train_and_evaluate(config, str(tmp_path))
