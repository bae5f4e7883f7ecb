"""SAM's Table 3 as transcribed: every Rsum and Nsum re-derived (the one where the paper's
arithmetic is off noted), each row a run of its official settings or SAM, and the NCS
columns read from jitr-eval's semantic report (``--semantic=topk:spice``)."""

import json

import pytest

from jitr.papers import TABLES, row_scores, sam
from jitr.papers.comparison import compare
from jitr.papers.plan import SeededRun
from jitr.papers.published import DERIVED, NCS_METRICS, RECALL_METRICS
from jitr.papers.run_configs import parsed_config


def test_every_rsum_and_nsum_is_its_rows_sum_but_where_noted():
  off = []
  for table in sam.TABLES:
    assert TABLES[table.name] is table
    for row in table.rows:
      v = row.values
      assert abs(sum(v[m] for m in RECALL_METRICS) - v["rsum"]) <= 0.35, row.label
      if (
        "nsum" in v
        and abs(DERIVED["nsum"].formula(*(v[m] for m in NCS_METRICS)) - v["nsum"]) > 0.35
      ):
        off.append((table.name, row.label))
        assert "arithmetic is off" in row.notes
  assert off == list(sam.ARITHMETIC_OFF)
  assert [t.protocol for t in sam.TABLES] == ["semantic", "folds", "semantic"]
  assert [t.semantic for t in sam.TABLES] == ["topk:spice", "", "topk:spice"]


@pytest.mark.parametrize(("row", "spec"), [(0, "f30k,vsrn,triplet"), (3, "f30k,cvse,sam")])
def test_each_row_is_a_run_of_the_official_settings_or_sam(row, spec, tmp_path):
  (run,) = TABLES["sam.table3.f30k"].rows[row].runs
  assert run.spec == spec
  config = parsed_config(SeededRun(run, 0, str(tmp_path / "w")), [])
  if spec.endswith("sam"):
    term = config.loss.sam
    assert (term.loss, term.input, term.sampling, term.keep_triplet) == (
      "semantic_margin_triplet",
      "cider",
      "hard",
      True,
    )
  else:
    assert "sam" not in config.loss


def test_a_semantic_table_is_scored_with_its_ncs_scores(tmp_path, monkeypatch):
  table = TABLES["sam.table3.coco5k"]
  workdir = str(tmp_path / "w")
  assert row_scores.eval_command(table, [workdir]) == [
    "jitr-eval",
    f"--workdir={workdir}",
    "--split=test",
    "--protocol=jitr",
    "--semantic=topk:spice",
  ]
  report = {f"full/{m}": 50.0 for m in (*RECALL_METRICS, "rsum")}
  report |= {m: 60.0 + i for i, m in enumerate(NCS_METRICS)}
  calls = []

  def evaluate(*args, **kwargs):
    calls.append((args, kwargs))
    path = tmp_path / "w" / "eval_test" / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(report))

  monkeypatch.setattr(row_scores, "evaluate_workdir", evaluate)
  assert row_scores.score_row(table, [workdir]) == report
  ((args, kwargs),) = calls
  assert kwargs["protocol"] == "jitr" and kwargs["semantic"].spec == "topk:spice"
  cells = compare(table, [[report]] + [[] for _ in table.rows[1:]])["rows"][0]["metrics"]
  assert cells["semantic/i2t/NCS@1"]["mean"] == 60.0
  assert cells["nsum"]["mean"] == sum(60.0 + i for i in range(6))
  assert cells["nsum"]["difference"] == round(375.0 - 362.2, 4)
