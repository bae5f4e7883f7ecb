"""CMAL²R's Table 1 as transcribed: each Average re-derived from its row (the one where the
paper's arithmetic is off listed and noted), the two rows jitr runs and their loss
settings, and the scale from jitr's percent to the printed [0, 1]."""

import pytest

from jitr.papers import TABLES, cmal2r
from jitr.papers.comparison import compare
from jitr.papers.plan import SeededRun
from jitr.papers.run_configs import parsed_config
from jitr.papers.table_files import markdown
from tests.labelled_folders import WIKI, write_labelled


def test_each_average_is_the_mean_of_its_two_directions_but_where_noted():
  off = []
  for table in cmal2r.TABLES:
    assert TABLES[table.name] is table
    for row in table.rows:
      v = row.values
      # each printed MAP is rounded to ±0.00005: their mean to ±0.00005, its own rounding more
      if abs((v["i2t/mAP"] + v["t2i/mAP"]) / 2 - v["mAP"]) > 0.0001:
        off.append((table.name, row.label))
        assert "arithmetic is off" in row.notes
      else:
        assert "arithmetic" not in row.notes
  assert off == [("cmal2r.table1.wiki", "ml-CCA")]
  assert [len(t.rows) for t in cmal2r.TABLES] == [10, 6]


@pytest.mark.parametrize(("label", "alpha"), [("CMAL²R(bi.)", 0.4), ("CMAL²R", 1.0)])
def test_the_cmal2r_rows_train_the_adaptive_listwise_loss(label, alpha, tmp_path):
  table = TABLES["cmal2r.table1.wiki"]
  (row,) = [r for r in table.rows if r.label == label]
  (run,) = row.runs
  write_labelled(tmp_path / "wiki", WIKI, {"train": 40, "test": 20})
  config = parsed_config(
    SeededRun(run, 0, str(tmp_path / "w")), [f"labelled.folder={tmp_path / 'wiki'}"]
  )
  assert config.model.name == "twobranch" and config.dataset == "wiki"
  assert list(config.loss) == ["adaptive_listwise"]
  assert config.loss.adaptive_listwise.alpha == alpha
  assert config.loss.adaptive_listwise.sharpness == 0.5  # β
  others = [r for r in table.rows if r.label not in ("CMAL²R", "CMAL²R(bi.)")]
  assert all(not r.runs and "not in jitr" in r.notes for r in others)


def test_jitrs_class_map_in_percent_is_compared_in_the_printed_unit():
  table = TABLES["cmal2r.table1.pascal"]
  scores = {"class/i2t/mAP": 52.0, "class/t2i/mAP": 47.0, "class/mAP": 49.5}
  seeds = [[scores] if r.runs else [] for r in table.rows]
  got = compare(table, seeds)["rows"][-1]["metrics"]
  assert got["i2t/mAP"]["mean"] == 0.52 and got["mAP"]["mean"] == 0.495
  assert got["mAP"]["difference"] == round(0.495 - 0.5002, 4)


def test_the_report_shows_map_with_the_papers_four_decimals():
  table = TABLES["cmal2r.table1.pascal"]
  scores = {"class/i2t/mAP": 52.0, "class/t2i/mAP": 47.0, "class/mAP": 49.5}
  page = markdown(compare(table, [[scores] if r.runs else [] for r in table.rows]))
  assert "| CMAL²R(bi.) | paper | 0.5172 | 0.4831 | 0.5002 |" in page
  assert "| | jitr (1 seed) | 0.5200 ± 0.0000 | 0.4700 ± 0.0000 | 0.4950 ± 0.0000 |" in page
  assert "| | difference | +0.0028 | -0.0131 | -0.0052 |" in page
