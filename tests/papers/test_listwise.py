"""Listwise ITR's Tables II-IV as transcribed: the rows jitr trains and their runs (SGRAF as
the ensemble of SGR and SAF, + Listwise as the triplet with Smooth-NDCG), the quoted rows
as reference lines, and COCO 5K's unprinted cells (their RSUM is checked with every
table's in test_registry)."""

import pytest

from jitr.papers import TABLES, listwise, row_scores
from jitr.papers.comparison import compare
from jitr.papers.plan import SeededRun
from jitr.papers.run_configs import parsed_config


def test_the_three_tables_and_their_rows():
  assert [t.name for t in listwise.TABLES] == [
    "listwise.table1.eccv",
    "listwise.table2.f30k",
    "listwise.table3.coco1k",
    "listwise.table4.coco5k",
    "listwise.table5.f30k",
    "listwise.table6.coco1k",
    "listwise.table6.coco5k",
    "listwise.table7.eccv",
    "listwise.table8.f30k",
  ]
  assert [len(t.rows) for t in listwise.TABLES] == [2, 32, 30, 21, 3, 3, 3, 3, 2]
  protocols = ["reference"] + ["full", "folds", "full"] * 2 + ["eccv", "reference"]
  assert [t.protocol for t in listwise.TABLES] == protocols
  f30k = TABLES["listwise.table2.f30k"]
  runs = {row.label: [run.spec for run in row.runs] for row in f30k.rows if row.runs}
  assert runs == {
    "SAF (AAAI'21) [12]": ["f30k,saf,triplet"],
    "SAF + Listwise": ["f30k,saf,sndcg"],
    "SGR (AAAI'21) [12]": ["f30k,sgr,triplet"],
    "SGR + Listwise": ["f30k,sgr,sndcg"],
    "SGRAF (AAAI'21) [12]": ["f30k,sgr,triplet", "f30k,saf,triplet"],
    "SGRAF + Listwise": ["f30k,sgr,sndcg", "f30k,saf,sndcg"],
    "CVSE (ECCV'20) [22]": ["f30k,cvse,triplet"],
    "VSRN (ICCV'19) [10]": ["f30k,vsrn,triplet"],
    "VSE∞ (CVPR'21) [23]": ["f30k,vseinf,triplet"],
    "VSE++†": ["f30k,vsepp,triplet"],
    "VSE++† + Listwise": ["f30k,vsepp,sndcg"],
    "VSE∞ + Listwise": ["f30k,vseinf,sndcg"],
  }
  quoted = [row for row in f30k.rows if not row.runs]
  assert len(quoted) == 32 - 13  # VSE∞ [23] is printed twice, both rows run
  assert all("printed for reference" in row.notes for row in quoted)
  # the COCO tables share their runs: one training, scored on 1K folds and on 5K
  assert set(TABLES["listwise.table4.coco5k"].runs()) <= set(
    TABLES["listwise.table3.coco1k"].runs()
  )


def test_listwise_rows_add_smooth_ndcg_on_sentence_relevance_to_the_triplet(tmp_path):
  (row,) = [r for r in TABLES["listwise.table2.f30k"].rows if r.label == "VSE++† + Listwise"]
  config = parsed_config(SeededRun(row.runs[0], 0, str(tmp_path / "w")), [])
  assert sorted(config.loss) == ["smooth_ndcg", "triplet"]
  assert config.loss.smooth_ndcg.temperature == 0.01  # τ = 10⁻²
  assert config.loss.triplet.margin == 0.2  # λ = 0.2
  assert "sentence" in config.graded.relevance


def test_a_cell_the_paper_leaves_empty_has_no_published_number():
  table = TABLES["listwise.table4.coco5k"]
  (sgraf,) = [r for r in table.rows if r.label == "SGRAF (AAAI'21) [12]"]
  assert sorted(sgraf.values) == ["i2t/R@1", "i2t/R@10", "t2i/R@1", "t2i/R@10"]
  scores = {f"full/{m}": 50.0 for m in ("i2t/R@1", "i2t/R@5", "i2t/R@10", "t2i/R@1")}
  scores |= {"full/t2i/R@5": 50.0, "full/t2i/R@10": 50.0, "full/rsum": 300.0}
  seeds = [[scores] if r is sgraf else [] for r in table.rows]
  cells = compare(table, seeds)["rows"][table.rows.index(sgraf)]["metrics"]
  assert cells["i2t/R@5"] == {"published": None, "seeds": [50.0], "mean": 50.0, "std": 0.0}
  assert cells["i2t/R@1"]["difference"] == pytest.approx(50.0 - 57.8)


@pytest.mark.parametrize(
  ("ablation", "results"),
  [
    ("listwise.table5.f30k", "listwise.table2.f30k"),
    ("listwise.table6.coco1k", "listwise.table3.coco1k"),
    ("listwise.table6.coco5k", "listwise.table4.coco5k"),
  ],
)
def test_the_ablations_triplet_and_both_rows_are_vsepp_with_and_without_listwise(ablation, results):
  """The paper prints the same numbers for the ablation's first and last rows as for
  VSE++† and VSE++† + Listwise, and jitr scores them from the same runs."""
  rows = {r.label: r for r in TABLES[results].rows}
  triplet, alone, both = TABLES[ablation].rows
  assert (triplet.values, triplet.runs) == (rows["VSE++†"].values, rows["VSE++†"].runs)
  plus = rows["VSE++† + Listwise"]
  assert (both.values, both.runs) == (plus.values, plus.runs)
  assert alone.runs[0].overrides == (("loss.triplet.weight", "0.0"),)


def test_smooth_ndcg_alone_trains_with_the_triplet_at_weight_zero(tmp_path):
  (run,) = TABLES["listwise.table5.f30k"].rows[1].runs
  config = parsed_config(SeededRun(run, 0, str(tmp_path / "w")), [])
  assert config.loss.triplet.weight == 0.0 and config.loss.smooth_ndcg.weight == 1.0


def test_table_vii_scores_the_coco_ablation_runs_against_eccv_caption(tmp_path):
  table = TABLES["listwise.table7.eccv"]
  assert table.runs() == TABLES["listwise.table6.coco5k"].runs()
  assert table.report_keys("i2t/mAP@R") == ("eccv/i2t/mAP@R",)
  workdir = str(tmp_path / "w")
  assert row_scores.eval_command(table, [workdir]) == [
    "jitr-eval",
    f"--workdir={workdir}",
    "--split=test",
    "--protocol=jitr",
    "--eccv",
  ]
  assert row_scores.report_path(table, [workdir]).endswith("/w/eval_test/metrics.json")
