"""End-to-end smoke test of jitr-train on the tiny jitr_shapes config."""

import json
import os

import ml_collections
import numpy as np
import pytest

from configs import default
from jitr import experiment
from jitr.data import pairs
from jitr.experiment.workdir import data_dir
from jitr.training.checkpoints import Checkpoints
from tests.fake_bucket import fake_bucket
from tests.file_fixtures import write_precomp
from tests.retrieval_reference import assert_test_metrics_of_best_checkpoint


def _scalar_steps(logdir):
  """``{tag: [steps]}`` of the scalars in the TensorBoard event files under ``logdir``."""
  from tensorboard.backend.event_processing import event_accumulator

  acc = event_accumulator.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
  acc.Reload()
  return {tag: [e.step for e in acc.Tensors(tag)] for tag in acc.Tags()["tensors"]}


def _untrained_and_trained(config, workdir):
  """The train split's metrics under the initial parameters and under the best
  checkpoint's (the same data, model and seed as the run)."""
  data = experiment.load_data(config, data_dir(config, workdir))
  steps = pairs.steps_per_epoch(data.splits["train"], config.batch_size)
  model, initial = experiment.initial_state(config, len(data.vocab), data.splits["train"], steps)
  evaluator = experiment.Evaluator(
    model, data.splits, None, None, batch_size=config.eval_batch_size
  )
  checkpoints = Checkpoints(workdir)
  best = checkpoints.restore(initial, which="best")
  checkpoints.close()
  return evaluator("train", initial.variables), evaluator("train", best.variables)


@pytest.mark.slow
def test_default_config_trains_end_to_end_on_tiny_shapes(tmp_path):
  config = default.get_config()
  config.shapes_config = "tiny"
  config.graded.relevance = "oracle"
  config.num_epochs = 4
  config.batch_size = 40
  config.model.embed_dim = 32
  config.model.word_dim = 16
  config.optimizer.learning_rate = 2e-3  # 20 steps: a higher rate, no decay
  config.optimizer.decay_epochs = ()
  config.log_every_steps = 5
  config.token_buckets = ()  # one caption width: the train step compiles once
  metrics = experiment.train_and_evaluate(config, str(tmp_path / "run")).metrics
  for key in ("full/rsum", "ndcg/i2t/NDCG@10", "exact/t2i/mAP@R"):
    assert 0.0 <= metrics[key] <= (600.0 if key == "full/rsum" else 100.0)
  # The tiny test split (10 images) cannot tell a trained model from chance (its
  # t2i R@10 is 100 for any model), so learning is judged on the 40 training
  # images: untrained RSUM is about 100, R@1 about 5.
  untrained, trained = _untrained_and_trained(config, str(tmp_path / "run"))
  assert trained["full/rsum"] >= untrained["full/rsum"] + 120, (untrained, trained)
  for key in ("full/i2t/R@1", "full/t2i/R@1"):
    assert trained[key] >= untrained[key] + 12, (key, untrained[key], trained[key])
  with open(tmp_path / "run" / "metrics.json") as f:
    assert json.load(f)["full/rsum"] == pytest.approx(metrics["full/rsum"])
  assert os.path.exists(tmp_path / "run" / "results.md")
  assert os.listdir(tmp_path / "run" / "checkpoints" / "best")
  logged = _scalar_steps(tmp_path / "run" / "tensorboard")
  assert logged["train/loss"] == logged["steps_per_sec"] == [5, 10, 15, 20]
  assert logged["val/full/rsum"] == [5, 10, 15, 20]  # after each epoch of 5 steps
  # jitr-eval on the same workdir: the best checkpoint gives the same test numbers and a report.
  again = experiment.evaluate_workdir(str(tmp_path / "run"), split="test")
  for key in ("full/rsum", "ndcg/i2t/NDCG@10", "exact/t2i/mAP@R"):
    assert again[key] == pytest.approx(metrics[key], abs=1e-6), key
  out = tmp_path / "run" / "eval_test"
  for name in ("metrics.json", "metrics.md", "queries.png"):
    assert (out / name).stat().st_size > 0, name
  assert any(
    p.suffix == ".png" and p.name != "queries.png" for p in out.iterdir()
  )  # recall / NDCG curves
  with open(out / "queries.png", "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_bad_config_is_refused(tmp_path):
  config = default.get_config()
  config.graded.relevance = "bm25"
  with pytest.raises(ValueError, match="config.graded.relevance"):
    experiment.train_and_evaluate(config, str(tmp_path))


def _scalar_values(logdir, tag):
  """``[(step, value)]`` of the scalar ``tag`` in the TensorBoard event files under ``logdir``."""
  from tensorboard.backend.event_processing import event_accumulator
  from tensorboard.util import tensor_util

  acc = event_accumulator.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
  acc.Reload()
  return [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in acc.Tensors(tag)]


@pytest.mark.slow
def test_precomp_folder_trains_end_to_end(tmp_path, monkeypatch):
  """3 epochs of 6 steps on a random 20-image precomp folder in a bucket (``gs://``, a
  local stand-in), validated every 4 steps and after each epoch: the written test metrics
  are the best checkpoint's (of any validation), recomputed from its towers on the whole
  split and ranked in numpy, every validation is in validation.json, and the loss terms
  fell while training."""
  write_precomp(tmp_path / "bucket" / "data", 20, n_eval=10)
  (tmp_path / "cwd").mkdir()
  monkeypatch.chdir(tmp_path / "cwd")  # a URL handed to os would become a folder here
  with fake_bucket(tmp_path / "bucket") as bucket:
    _train_on_precomp(tmp_path, f"{bucket}/data")
  assert os.listdir(tmp_path / "cwd") == []
  assert json.loads((tmp_path / "run" / "config.json").read_text())["precomp_root"] == (
    "gs://bucket/data"
  )


def _train_on_precomp(tmp_path, precomp_root):
  config = default.get_config()
  config.dataset = "f30k_precomp"
  config.precomp_root = precomp_root
  config.graded = ml_collections.ConfigDict({"relevance": "vectors:lsa"})
  config.estimators.lsa.k = 4
  config.num_epochs = 3
  config.batch_size = 16  # 100 captions: 6 steps an epoch
  config.model.embed_dim = 16
  config.model.word_dim = 8
  config.optimizer.learning_rate = 2e-3  # 18 steps: a higher rate, no decay
  config.optimizer.decay_epochs = ()
  config.log_every_steps = 1
  config.eval_every_steps = 4
  metrics = experiment.train_and_evaluate(config, str(tmp_path / "run")).metrics
  assert "ndcg/i2t/NDCG@10" not in metrics  # no exact relevance in a precomp folder
  with open(tmp_path / "run" / "metrics.json") as f:
    written = json.load(f)
  assert written == pytest.approx(metrics, abs=1e-9, nan_ok=True)
  # the best of the 3 end-of-epoch checkpoints, scored again from its towers
  validated = (4, 6, 8, 12, 16, 18)  # every 4 steps within an epoch, and each epoch's end
  step = assert_test_metrics_of_best_checkpoint(written, tmp_path / "run", steps=validated)
  assert f"(step {step})" in (tmp_path / "run" / "results.md").read_text()
  history = json.loads((tmp_path / "run" / "validation.json").read_text())
  assert [(v["step"], v["epoch"]) for v in history["validations"]] == [
    (s, s / 6) for s in validated
  ]
  rsums = [v["metrics"]["full/rsum"] for v in history["validations"]]
  assert validated[rsums.index(max(rsums))] == step  # the first best validation is kept
  assert [s for s, _ in _scalar_values(tmp_path / "run" / "tensorboard", "val/full/rsum")] == list(
    validated
  )
  # Learning: the epoch-0 objective (sum-of-hinges warm-up) and the hardest-negative
  # triplet (logged every step, active from epoch 1) are lower in the last epoch than in
  # the first (the total train/loss drops by the switch of terms alone, so it is not used).
  logdir = tmp_path / "run" / "tensorboard"
  for tag, drop in (("train/loss/warmup", 0.3), ("train/loss/triplet", 0.05)):
    logged = _scalar_values(logdir, tag)
    assert [s for s, _ in logged] == list(range(1, 19)), tag
    first, last = (np.mean([v for _, v in logged[e * 6 : e * 6 + 6]]) for e in (0, 2))
    assert last < first - drop, (tag, logged)


def test_eval_of_a_folder_without_config_is_refused(tmp_path):
  with pytest.raises(FileNotFoundError, match="config.json"):
    experiment.evaluate_workdir(str(tmp_path))


def test_precomp_without_root_is_refused(tmp_path):
  config = default.get_config()
  config.dataset = "coco_precomp"
  with pytest.raises(ValueError, match="config.precomp_root"):
    experiment.train_and_evaluate(config, str(tmp_path))
