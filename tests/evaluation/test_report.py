"""metrics.json (atomic), the markdown table and the PNG plots."""

import json
import os

import numpy as np
import pytest

from jitr.evaluation import EvalOptions, evaluate_retrieval
from jitr.evaluation.plots import QueryExample, curve_series, plot_query_panel
from jitr.evaluation.report import markdown_table, split_key, write_json_atomic, write_report

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def metrics():
  rng = np.random.default_rng(0)
  owner = np.repeat(np.arange(20), 5)
  sim = rng.standard_normal((20, 100)).astype(np.float32)
  sim[owner, np.arange(100)] += 2.0
  rel = rng.random((20, 100)).astype(np.float32)
  options = EvalOptions(folds=2, ndcg_ks=(1, 5, 10), curve_ks=(1, 2, 5, 10))
  return evaluate_retrieval(sim, caption_to_image=owner, relevance=rel, options=options)


def test_write_report(tmp_path, metrics):
  paths = write_report(str(tmp_path), metrics, title="run")
  assert set(paths) == {"json", "markdown", "recall_plot", "ndcg_plot"}
  with open(paths["json"]) as f:
    data = json.load(f)
  assert data == pytest.approx(dict(metrics))
  assert list(data) == sorted(data)
  md = open(paths["markdown"]).read()
  assert md.startswith("# run\n")
  assert "## full" in md and "## folds" in md and "## ndcg" in md
  row = next(line for line in md.splitlines() if line.startswith("| R@1 |"))
  assert row == (f"| R@1 | {metrics['full/i2t/R@1']:.2f} | {metrics['full/t2i/R@1']:.2f} |  |")
  for key in ("recall_plot", "ndcg_plot"):
    with open(paths[key], "rb") as f:
      assert f.read(8) == PNG
  assert sorted(os.listdir(tmp_path)) == [
    "metrics.json",
    "metrics.md",
    "ndcg_at_k.png",
    "recall_at_k.png",
  ]  # no temp files left


def test_json_is_atomic_and_nan_becomes_null(tmp_path):
  path = str(tmp_path / "metrics.json")
  write_json_atomic(path, {"a/i2t/R@1": 1.5, "b/x": float("nan")})
  assert json.load(open(path)) == {"a/i2t/R@1": 1.5, "b/x": None}
  with pytest.raises(ValueError, match="bad"):
    write_json_atomic(path, {"bad": "not a number"})
  # The failed write left the previous file intact and no temp file behind.
  assert json.load(open(path)) == {"a/i2t/R@1": 1.5, "b/x": None}
  assert os.listdir(tmp_path) == ["metrics.json"]


def test_markdown_and_keys():
  md = markdown_table({"full/i2t/R@10": 50.0, "full/i2t/R@2": 20.0, "full/rsum": 300.0})
  lines = md.splitlines()
  assert lines[0] == "## full"
  assert lines[2] == "| metric | i2t | all |"
  assert lines[4:7] == ["| R@2 | 20.00 |  |", "| R@10 | 50.00 |  |", "| rsum |  | 300.00 |"]
  assert split_key("eccv/t2i/mAP@R") == ("eccv", "t2i", "mAP@R")
  assert split_key("rsum") == ("summary", None, "rsum")  # bare keys, e.g. added by apps
  with pytest.raises(ValueError, match="protocol"):
    split_key("a/b/c/d")


def test_curve_series(metrics):
  s = curve_series(metrics, "NDCG")
  assert set(s) == {"ndcg/i2t", "ndcg/t2i"}
  ks, vals = s["ndcg/i2t"]
  np.testing.assert_array_equal(ks, [1, 5, 10])
  assert vals[2] == metrics["ndcg/i2t/NDCG@10"]


def test_query_panel(tmp_path):
  import matplotlib.image  # pylint: disable=g-import-not-at-top

  rng = np.random.default_rng(0)
  calls = []

  def image():
    calls.append(1)
    return rng.random((12, 12, 3))

  examples = [
    QueryExample(
      image,
      ["a red circle", "a blue square", image, "x", "y"],
      [1.0, 0.8, 0.5, 0.1, 0.0],
      positive=[True] + [False] * 4,
      title="image 3",
    ),
    QueryExample("a green triangle", [image] * 5, [0.9, 0.7, 0.6, 0.2, 0.1]),
  ]
  path = str(tmp_path / "panel.png")
  plot_query_panel(examples, path, title="top-5")
  img = matplotlib.image.imread(path)
  assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 300
  assert len(calls) == 7  # every callable resolved once
  with pytest.raises(ValueError, match="relevance"):
    QueryExample("q", ["a", "b"], [1.0])
