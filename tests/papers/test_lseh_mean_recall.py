"""LSEH's Table 8 in jitr-tables: one row per loss over the five networks' runs of Tables
4-7, scored by pooling each run's own test recalls (their mean and population std), with
the printed numbers and Table 5's slip kept as printed."""

import math

import pytest

from jitr.papers import TABLES, lseh, lseh_mean_recall
from jitr.papers.pooled_scores import pooled_scores
from jitr.papers.published import RECALL_METRICS


def test_each_row_is_the_five_networks_runs_of_its_loss():
  for table in lseh_mean_recall.TABLES:
    results = next(t for t in lseh.RESULTS if t.name.rsplit(".")[-1] == table.name.rsplit(".")[-1])
    assert table.protocol == {"full": "pooled_full", "folds": "pooled_folds"}[results.protocol]
    assert [row.label for row in table.rows] == list(lseh.LOSSES)
    for row in table.rows:
      want = [r.runs[0] for r in results.rows if r.label.endswith(f" {row.label}")]
      assert list(row.runs) == want and len(want) == 5, (table.name, row.label)
      printed = lseh.TABLE8[table.name.rsplit(".", 1)[1]][row.label]
      assert tuple(row.values.values()) == printed
  assert "arithmetic is off" in TABLES["lseh.table8.coco1k"].rows[0].notes


def test_a_row_pools_its_runs_recalls():
  """Two runs: i2t recalls (10, 20, 30) and (40, 50, 60): mean 35, population std of the
  six sqrt(291.67); t2i all 50: std 0. Each run is scored alone under the table's
  underlying protocol (COCO 1K's folds)."""
  table = TABLES["lseh.table8.coco1k"]
  asked = []

  def score(base, workdirs):
    asked.append((base.protocol, base.metrics, tuple(workdirs)))
    low = workdirs[0] == "a"
    i2t = (10.0, 20.0, 30.0) if low else (40.0, 50.0, 60.0)
    return {
      **{f"folds/i2t/R@{k}": v for k, v in zip((1, 5, 10), i2t)},
      **{f"folds/t2i/R@{k}": 50.0 for k in (1, 5, 10)},
    }

  got = pooled_scores(table, ["a", "b"], score)
  assert asked == [("folds", RECALL_METRICS, ("a",)), ("folds", RECALL_METRICS, ("b",))]
  assert got["pooled/i2t/networks_mean"] == 35.0
  assert got["pooled/i2t/networks_std"] == pytest.approx(math.sqrt(1750 / 6))
  assert (got["pooled/t2i/networks_mean"], got["pooled/t2i/networks_std"]) == (50.0, 0.0)
  assert table.value(got, "i2t/networks_mean") == 35.0
