"""SAM's tables as transcribed: every Rsum and Nsum re-derived (the one where the paper's
arithmetic is off noted), each row a run of its official settings or SAM with the row's
training fraction or SAM settings, and the NCS columns read from jitr-eval's semantic
report (``--semantic=topk:spice``), on COCO 1K from its folds' keys."""

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
      if "i2t/R@1" in v:
        assert abs(sum(v[m] for m in RECALL_METRICS) - v["rsum"]) <= 0.35, row.label
      if (
        NCS_METRICS[0] in v
        and abs(DERIVED["nsum"].formula(*(v[m] for m in NCS_METRICS)) - v["nsum"]) > 0.35
      ):
        off.append((table.name, row.label))
        assert "arithmetic is off" in row.notes
  assert off == list(sam.ARITHMETIC_OFF)
  assert {t.name.rsplit(".", 1)[0] for t in sam.TABLES} == {f"sam.table{i}" for i in range(1, 6)}
  for table in sam.TABLES:
    coco1k = table.name.endswith(("coco1k", "coco1k_3", "coco1k_5"))
    reference = table.name == "sam.table1.crisscrossed"
    want = "reference" if reference else "semantic_folds" if coco1k else "semantic"
    assert table.protocol == want, table.name
    assert table.semantic == ("" if reference else "topk:spice"), table.name
    assert bool(table.runs()) != reference, table.name


def test_the_ablations_and_reduced_data_rows_are_their_settings(tmp_path):
  table4 = TABLES["sam.table4.coco1k"]
  assert [row.label for row in table4.rows][:2] == ["τ=3, SN, triplet kept", "τ=3, SN, SAM alone"]
  (run,) = table4.rows[1].runs
  assert run.name == "coco_cvse_sam_tau3_soft_alone"
  config = parsed_config(SeededRun(run, 0, str(tmp_path / "a")), [])
  term = config.loss.sam
  assert (term.temperature, term.sampling, term.keep_triplet) == (3.0, "soft", False)
  (run,) = TABLES["sam.table5.f30k"].rows[6].runs  # τ=3, HN, triplet kept
  assert run.name == "f30k_cvse_sam_tau3_hard_triplet"
  (run,) = TABLES["sam.table2.coco1k_3"].rows[3].runs  # SGR + SAM on 3 % of COCO
  assert (run.name, run.spec) == ("coco_sgr_sam_train0.03", "coco,sgr,sam")
  config = parsed_config(SeededRun(run, 0, str(tmp_path / "b")), [])
  assert config.train_fraction == 0.03 and config.test_split == "testall"
  assert len(TABLES["sam.table5.f30k"].runs()) == 12


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
  assert kwargs["protocol"] == "jitr" and kwargs["extra"].semantic.spec == "topk:spice"
  cells = compare(table, [[report]] + [[] for _ in table.rows[1:]])["rows"][0]["metrics"]
  assert cells["semantic_gt/i2t/NCS@1"]["mean"] == 60.0
  assert cells["nsum"]["mean"] == sum(60.0 + i for i in range(6))
  assert cells["nsum"]["difference"] == round(375.0 - 362.2, 4)


def test_coco_1k_reads_the_folds_keys_and_nsum_n_the_removed_ncs():
  table = TABLES["sam.table4.coco1k"]
  assert table.report_keys("nsum")[0] == "folds_semantic_gt/i2t/NCS@1"
  assert table.report_keys("nsum_n")[-1] == "folds_semantic/t2i/NCS@10"
  assert table.report_keys("rsum") == ("folds/rsum",)
  f30k = TABLES["sam.table4.f30k"]
  assert f30k.report_keys("nsum_n")[0] == "semantic/i2t/NCS@1"
  scores = {key: 10.0 for m in f30k.metrics for key in f30k.report_keys(m)}
  assert f30k.value(scores, "nsum_n") == 60.0
