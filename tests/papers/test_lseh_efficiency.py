"""LSEH's Table 3 as transcribed (every Difference and Difference % re-derived from its
row, every Average from the rows), each row the LMH1, LMH2 and LSEH runs of Tables 4-7,
validated every 500 / 1,000 batches, and the columns computed from validation histories
by hand."""

import math

import pytest

from jitr.papers import TABLES, lseh, lseh_efficiency
from jitr.papers.comparison import compare
from jitr.papers.plan import SeededRun
from jitr.papers.row_scores import score_row
from jitr.papers.run_configs import parsed_config
from jitr.training.validation_history import with_validation, write_history


def test_every_difference_and_average_is_its_rows_arithmetic():
  checked = 0
  for table in lseh_efficiency.TABLES:
    assert TABLES[table.name] is table
    *rows, average = table.rows
    for row in rows:
      for lmh in ("lmh1", "lmh2"):
        v = {c: row.values[f"{lmh}/{c}"] for c in lseh_efficiency.COLUMNS}
        assert abs(v["lseh_epochs"] - v["epochs"] - v["difference"]) <= 0.11, row.label
        # each printed to one decimal: the ratio to the rounding of both epochs
        pct = 100 * v["difference"] / v["epochs"]
        assert abs(pct - v["difference_pct"]) <= 0.05 + 100 * 0.05 / v["epochs"], row.label
        checked += 1
    for metric, printed in average.values.items():
      assert abs(sum(r.values[metric] for r in rows) / len(rows) - printed) <= 0.05, metric
  assert checked == 30


def test_each_row_is_the_lmh1_lmh2_and_lseh_run_validated_as_the_paper(tmp_path):
  table = TABLES["lseh.table3.coco"]
  row = table.rows[2]  # SGRAF-SAF: validated every 1,000 batches
  assert row.runs == tuple(lseh.lseh_run("saf", loss, "coco") for loss in ("LMH1", "LMH2", "LSEH"))
  assert set(row.runs) <= set(TABLES["lseh.table5.coco1k"].runs())
  config = parsed_config(SeededRun(row.runs[2], 0, str(tmp_path / "w")), [])
  assert config.eval_every_steps == 1000
  (vsepp,) = TABLES["lseh.table4.f30k"].rows[0].runs
  assert parsed_config(SeededRun(vsepp, 0, str(tmp_path / "v")), []).eval_every_steps == 500
  assert table.rows[-1].runs == () and table.protocol == "validation"


def _history(root, name, rsums, steps_per_epoch=4):
  history = []
  for i, rsum in enumerate(rsums, start=1):
    history = with_validation(history, 2 * i, steps_per_epoch, {"full/rsum": rsum})
  (root / name).mkdir()
  write_history(str(root / name / "validation.json"), history, steps_per_epoch)
  return str(root / name)


def test_the_columns_come_from_the_validation_histories(tmp_path):
  """Validations every 2 steps of 4-step epochs (epochs 0.5, 1.0, 1.5, ...): LMH1's best
  M-Recall 60 (rsum 360) first at epoch 1.5, LSEH at or above it first at epoch 1.0; LMH2's
  best 50 at epoch 0.5, which LSEH passes at once; no LSEH reaches 70."""
  lmh1 = _history(tmp_path, "lmh1", (300.0, 330.0, 360.0, 360.0))
  lmh2 = _history(tmp_path, "lmh2", (300.0, 240.0))
  lseh_run = _history(tmp_path, "lseh", (330.0, 366.0, 200.0))
  table = TABLES["lseh.table3.f30k"]
  scores = score_row(table, [lmh1, lmh2, lseh_run])
  assert scores == {
    "validation/lmh1/mR": 60.0,
    "validation/lmh1/epochs": 1.5,
    "validation/lmh1/lseh_epochs": 1.0,
    "validation/lmh1/difference": -0.5,
    "validation/lmh1/difference_pct": pytest.approx(-100 / 3),
    "validation/lmh2/mR": 50.0,
    "validation/lmh2/epochs": 0.5,
    "validation/lmh2/lseh_epochs": 0.5,
    "validation/lmh2/difference": 0.0,
    "validation/lmh2/difference_pct": 0.0,
  }
  never = _history(tmp_path, "never", (100.0,))
  missed = score_row(table, [lmh1, lmh2, never])
  assert math.isnan(missed["validation/lmh1/lseh_epochs"])
  cells = compare(table, [[scores]] + [[] for _ in table.rows[1:]])["rows"][0]["metrics"]
  assert cells["lmh1/difference"]["difference"] == round(-0.5 - (-4.2), 4)
  (tmp_path / "empty").mkdir()
  with pytest.raises(ValueError, match=r"empty/validation.json: no validations"):
    score_row(table, [lmh1, lmh2, str(tmp_path / "empty")])
