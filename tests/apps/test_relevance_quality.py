"""jitr-relevance-quality on tiny jitr_shapes: the oracle is perfect, a constant estimate
ranks by the annotated positives then index order, the sources are those of training, and the
command prints and writes the table."""

import json
import math
import os
import pathlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau

from jitr.experiment.quality_table import format_table, quality_rows
from jitr.experiment.split_relevance import IN_SPLIT, estimated_relevance
from jitr.experiment.stored_relevance import caption_set
from jitr.relevance.registry import default_estimator_settings
from jitr.training.graded import SOURCES

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny_val(tmp_path_factory):
  from jitr.data.shapes import tfds as shapes_tfds

  data_dir = str(tmp_path_factory.mktemp("tfds"))
  shapes_tfds.build(data_dir, "tiny")
  data = shapes_tfds.load_split("val", data_dir=data_dir, config="tiny", images=False)
  exact = shapes_tfds.split_relevance("val", data_dir=data_dir, config="tiny")
  return data_dir, caption_set(data["captions"], 5, "tiny/val"), exact


def test_oracle_is_perfect(tiny_val):
  _, captions, exact = tiny_val
  est, positives = estimated_relevance("oracle", captions, exact)
  (row,) = quality_rows(est, exact, positives, ["none"], log=lambda _: None)
  for key in ("tau_b/i2t", "tau_b/t2i", "NDCG@10/i2t", "NDCG@10/t2i", "mAP@R/i2t", "mAP@R/t2i"):
    assert row[key] == pytest.approx(1.0), key
  assert row["MAE"] == 0.0 and row["gain@0"] == 0.0


def _ndcg10(order: np.ndarray, rel: np.ndarray) -> float:
  gains = np.exp2(rel) - 1
  disc = 1 / np.log2(np.arange(2, 12))
  return float(gains[order[:10]] @ disc / (np.sort(gains)[::-1][:10] @ disc))


def test_constant_estimate_ties_rank_in_index_order(tiny_val):
  """0.5 everywhere, positives 1: tau-b is that of the positive indicator, the ranking is
  the positives first, then index order (the evaluation's tie rule)."""
  _, captions, exact = tiny_val
  est, positives = estimated_relevance("constant", captions, exact)
  assert set(np.unique(est)) == {0.5, 1.0}
  rows = quality_rows(est, exact, positives, ["none", "minmax"], log=lambda _: None)
  tau = kendalltau(positives.ravel(), exact.ravel(), variant="b").statistic
  assert rows[0]["tau_b/i2t"] == pytest.approx(tau) and rows[0]["tau_b/t2i"] == pytest.approx(tau)
  want = np.mean(
    [
      _ndcg10(np.concatenate([np.flatnonzero(p), np.flatnonzero(~p)]), r)
      for p, r in zip(positives, exact)
    ]
  )
  assert rows[0]["NDCG@10/i2t"] == pytest.approx(want, abs=1e-6)
  # minmax sends every non-positive to 0: the same order and tau, gain@0 = 0
  assert rows[1]["NDCG@10/i2t"] == pytest.approx(want, abs=1e-6)
  assert rows[1]["tau_b/i2t"] == pytest.approx(tau) and rows[1]["gain@0"] == 0.0
  assert rows[0]["gain@0"] == pytest.approx(math.sqrt(2) - 1)


def test_order_keeping_chains_keep_tau_and_ranking(tiny_val):
  _, captions, exact = tiny_val
  settings = {"lsa": {"k": 16}}
  est, positives = estimated_relevance("vectors:lsa", captions, exact, settings=settings)
  none, squared = quality_rows(est, exact, positives, ["none", "power:2"], log=lambda _: None)
  fresh = kendalltau(np.ravel(est**2), exact.ravel(), variant="b").statistic
  assert squared["tau_b/i2t"] == pytest.approx(fresh)  # the shortcut is exact
  for key in ("NDCG@10/i2t", "NDCG@10/t2i", "mAP@R/i2t", "mAP@R/t2i"):
    assert squared[key] == pytest.approx(none[key])
  assert squared["MAE"] != none["MAE"]
  assert "| val | vectors:lsa | `power:2` |" in format_table(
    [{"split": "val", "estimator": "vectors:lsa", **squared}]
  )


def test_estimator_sources_are_the_fitted_estimators_relevance(tiny_val):
  """vectors:NAME is RSC (1 + max cos)/2 of the estimator built from the settings and fitted
  on the split; topk:NAME its clip(score / scale, 0, 1) over all captions; positives 1."""
  from jitr.relevance.lsa import LsaEstimator

  _, captions, exact = tiny_val
  settings = default_estimator_settings()
  settings.lsa.k = 16
  settings.lsa.aggregate = "mean"
  est, positives = estimated_relevance("vectors:lsa", captions, exact, settings=settings)
  lsa = LsaEstimator(k=16, aggregate="mean").fit(captions)
  want = np.clip(lsa.image_scores(np.arange(captions.num_images)), 0, 1)
  np.testing.assert_allclose(est, np.where(positives, 1.0, want), atol=1e-6)
  topk, _ = estimated_relevance("topk:lsa", captions, exact, settings=settings)
  np.testing.assert_allclose(topk, est, atol=1e-6)  # lsa's scale is 1: the same relevance


def test_sources_are_those_of_training(tiny_val):
  """Every graded source of training but LSEH's raw cosine and the label overlap of
  labelled vectors (no captions) has an in-split relevance; bad sources get the training
  parser's message."""
  _, captions, exact = tiny_val
  assert set(SOURCES) - set(IN_SPLIT) == {"cosine", "labels"} and set(IN_SPLIT) <= set(SOURCES)
  with pytest.raises(ValueError, match="graded source 'cosine:lsa': cosine: has no in-split"):
    estimated_relevance("cosine:lsa", captions, exact)
  with pytest.raises(ValueError, match="graded source 'lsa': expected one of"):
    estimated_relevance("lsa", captions, exact)
  with pytest.raises(ValueError, match="reads cosine vectors, but the cider estimator's are"):
    estimated_relevance("vectors:cider", captions, exact)


SCRIPT = str(pathlib.Path(sys.executable).with_name("jitr-relevance-quality"))  # console script
# The script's environment: no virtualenv, no offline variables; the suite's XLA flags and
# compilation cache (tests/conftest.py) kept, so its programs compile as the suite's do.
COMPILE_ENV = {k: v for k, v in os.environ.items() if k.startswith(("XLA_", "JAX_"))}


@pytest.mark.slow
def test_command_prints_and_writes_the_table(tiny_val, quality_run):
  data_dir, _, _ = tiny_val
  done, written, spec = quality_run
  assert "| val | oracle | `none` | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 0.000 |" in (
    done.stdout
  )
  assert written["settings"]["estimators"]["lsa"]["k"] == 64  # --config reached the run
  # progress: the (split, source) pairs scored, on stderr only
  assert "relevance quality: 4/4 sources (100%), " in done.stderr
  assert "sources (" not in done.stdout
  rows = written["rows"]
  assert [(r["estimator"], r["calibration"]) for r in rows] == [
    ("oracle", "none"), ("oracle", "minmax,power:2"),
    ("constant", "none"), ("constant", "minmax,power:2"),
    (spec, "none"), (spec, "minmax,power:2"),
    (f"hmean:constant|{spec}", "none"), (f"hmean:constant|{spec}", "minmax,power:2"),
  ]  # fmt: skip
  # a bad calibration is refused with the message the command prints after its name (the
  # command's one-line error form: test_command_scores_a_teacher_and_refuses_a_missing_one)
  from jitr.experiment.relevance_quality import QualityGrid, relevance_quality_report

  with pytest.raises(ValueError) as err:
    relevance_quality_report(
      data_dir, QualityGrid(["val"], ["oracle"], ["sharpen"]), shapes_config="tiny",
      log=lambda _: None,
    )  # fmt: skip
  assert "\n" not in str(err.value)
  assert str(err.value).startswith("calibration 'sharpen': unknown transform")


@pytest.fixture(scope="module")
def teacher(tiny_val, tmp_path_factory):
  """A saved (untrained) tiny vse teacher on the same data: ``(workdir, model, state)``."""
  from tests.experiment.test_teachers import make_teacher, tiny_config

  data_dir, _, _ = tiny_val
  workdir = tmp_path_factory.mktemp("teacher") / "vse"
  model, state, _ = make_teacher(workdir, tiny_config(data_dir))
  return workdir, model, state


@pytest.fixture(scope="module")
def quality_run(tiny_val, teacher, tmp_path_factory):
  """One run of the console script: the oracle, a constant, the teacher and a combination
  with it under two calibration chains, with a --config override. ``(the finished process,
  the written JSON, the teacher's spec)``."""
  data_dir, _, _ = tiny_val
  workdir, _, _ = teacher
  spec = f"teacher:{workdir}"
  cwd = tmp_path_factory.mktemp("quality")
  out = cwd / "quality.json"
  done = subprocess.run(
    [
      SCRIPT, f"--data_dir={data_dir}", "--shapes_config=tiny", "--splits=val",
      f"--estimators=oracle,constant,{spec},hmean:constant|{spec}",
      "--calibration=none", "--calibration=minmax,power:2",
      f"--output={out}", "--config.estimators.lsa.k=64",
    ],
    cwd=cwd, capture_output=True, text=True, timeout=600,
    env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", **COMPILE_ENV},
  )  # fmt: skip
  assert done.returncode == 0, done.stderr[-3000:]
  return done, json.loads(out.read_text()), spec


def _unit(x):
  x = np.asarray(x, np.float64)
  return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_teacher_and_combinations_by_hand(tiny_val, teacher):
  """teacher:W is (1 + cos)/2 of the teacher's embeddings of the val split (its captions
  tokenised with the teacher's vocabulary), positives 1; hmean / mean combine by hand."""
  from jitr.data.shapes import split as shapes_split
  from jitr.data.shapes import tfds as shapes_tfds
  from jitr.data.vocab import Vocab
  from jitr.experiment.teachers import shapes_split_embeddings

  data_dir, captions, exact = tiny_val
  workdir, model, state = teacher
  arrays = shapes_tfds.load_split("val", data_dir=data_dir, config="tiny", images=True)
  images, caps = shapes_split_embeddings(str(workdir), arrays, "tiny", batch_size=7)
  split = shapes_split.retrieval_split(arrays, Vocab.load(str(workdir / "vocab.json")))
  direct_img = _unit(model.encode_images(state.variables, split.images, split.image_mask))
  direct_cap = _unit(model.encode_captions(state.variables, split.tokens, split.lengths))
  np.testing.assert_allclose(images, direct_img, atol=1e-5)
  np.testing.assert_allclose(caps, direct_cap, atol=1e-5)

  spec = f"teacher:{workdir}"
  lookup = {str(workdir): (images, caps)}.get
  est, positives = estimated_relevance(spec, captions, exact, teacher=lookup)
  want = np.where(positives, 1.0, (1.0 + direct_img @ direct_cap.T) / 2)
  np.testing.assert_allclose(est, want, atol=1e-5)
  assert positives.sum() == 50 and est.min() >= 0 and est.max() <= 1

  hmean, _ = estimated_relevance(f"hmean:constant|{spec}", captions, exact, teacher=lookup)
  np.testing.assert_allclose(hmean, np.where(positives, 1.0, want / (0.5 + want)), atol=1e-5)
  mean, _ = estimated_relevance("mean:oracle|constant", captions, exact)
  np.testing.assert_allclose(mean, np.where(positives, 1.0, (exact + 0.5) / 2), atol=1e-6)


def test_command_scores_a_teacher_and_refuses_a_missing_one(
  tiny_val, teacher, quality_run, tmp_path
):
  data_dir, captions, exact = tiny_val
  workdir, model, state = teacher
  done, written, spec = quality_run
  assert written["settings"]["teachers"] == {str(workdir): str(workdir)}
  rows = [r for r in written["rows"] if spec in r["estimator"]]
  assert [r["estimator"] for r in rows[::2]] == [spec, f"hmean:constant|{spec}"]
  # the same numbers as scoring the teacher's direct embeddings in this process
  from jitr.data.shapes import split as shapes_split
  from jitr.data.shapes import tfds as shapes_tfds
  from jitr.data.vocab import Vocab

  arrays = shapes_tfds.load_split("val", data_dir=data_dir, config="tiny", images=True)
  split = shapes_split.retrieval_split(arrays, Vocab.load(str(workdir / "vocab.json")))
  img = model.encode_images(state.variables, split.images, split.image_mask)
  cap = model.encode_captions(state.variables, split.tokens, split.lengths)
  est, positives = estimated_relevance(spec, captions, exact, teacher=lambda _: (img, cap))
  wants = quality_rows(est, exact, positives, ["none", "minmax,power:2"], log=lambda _: None)
  for want, got in zip(wants, rows[:2]):
    for key, value in want.items():
      assert got[key] == pytest.approx(value, abs=1e-4), (got["calibration"], key)
  assert f"| val | {spec} | `none` |" in done.stdout
  assert f"| val | hmean:constant\\|{spec} | `none` |" in done.stdout  # the | escaped

  missing = tmp_path / "nowhere"
  bad = subprocess.run(
    [SCRIPT, f"--data_dir={data_dir}", "--shapes_config=tiny", f"--estimators=teacher:{missing}"],
    cwd=tmp_path, capture_output=True, text=True, timeout=600,
    env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", **COMPILE_ENV},
  )  # fmt: skip
  assert bad.returncode == 1
  assert bad.stderr.strip().splitlines()[-1] == (
    f"jitr-relevance-quality: error: teacher:{missing}: no such workdir ({missing})"
  )
