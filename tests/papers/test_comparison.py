"""The comparison of a published table with jitr's scores: mean, sample std and the
difference per metric, by hand; its Markdown, JSON and PNG files."""

import json
import math

import pytest

from jitr.papers.comparison import compare, mean_std
from jitr.papers.published import Row, Run, Table
from jitr.papers.table_files import markdown, write_table_files

RUN = Run("f30k_vsepp_triplet", "f30k,vsepp,triplet")
TABLE = Table(
  name="demo.1.f30k",
  paper="Demo",
  table="Table 1",
  caption="A caption.",
  protocol="full",
  metrics=("i2t/R@1", "rsum"),
  rows=(
    Row("VSE++", {"i2t/R@1": 50.0, "rsum": 400.0}, (RUN,)),
    Row("Quoted", {"i2t/R@1": 60.0, "rsum": 450.5}, (), notes="quoted from another paper"),
    Row("Waiting", {"i2t/R@1": 55.0}, (RUN,)),
  ),
  source="the paper",
)


def test_mean_and_sample_std_by_hand():
  assert mean_std([1.0, 2.0, 6.0]) == (3.0, pytest.approx(math.sqrt((4 + 1 + 9) / 2)))
  assert mean_std([7.5]) == (7.5, 0.0)


def test_each_metric_compares_the_mean_of_the_seeds_with_the_printed_number():
  seeds = [{"full/i2t/R@1": 48.0, "full/rsum": 401.0}, {"full/i2t/R@1": 51.0, "full/rsum": 405.0}]
  got = compare(TABLE, [seeds, [], []])
  vse = got["rows"][0]["metrics"]
  assert vse["i2t/R@1"] == {
    "published": 50.0,
    "seeds": [48.0, 51.0],
    "mean": 49.5,
    "std": round(math.sqrt(4.5), 4),
    "difference": -0.5,
  }
  assert vse["rsum"]["difference"] == 3.0
  assert got["rows"][1]["metrics"]["rsum"] == {"published": 450.5, "seeds": []}
  # a metric the row does not print: jitr's mean, no difference
  waiting = compare(TABLE, [[], [], seeds])["rows"][2]["metrics"]["rsum"]
  assert waiting["published"] is None and waiting["mean"] == 403.0
  assert "difference" not in waiting


def test_a_scale_turns_jitrs_percent_into_the_printed_unit():
  table = Table(**{**TABLE.__dict__, "protocol": "class", "metrics": ("mAP",), "scale": 0.01})
  table = Table(**{**table.__dict__, "rows": (Row("CMAL²R", {"mAP": 0.3866}, (RUN,)),)})
  got = compare(table, [[{"class/mAP": 40.0}]])["rows"][0]["metrics"]["mAP"]
  assert got["mean"] == 0.4 and got["difference"] == round(0.4 - 0.3866, 4)


def test_markdown_lists_paper_jitr_and_difference_lines():
  seeds = [{"full/i2t/R@1": 48.0, "full/rsum": 401.0}, {"full/i2t/R@1": 51.0, "full/rsum": 405.0}]
  page = markdown(compare(TABLE, [seeds, [], []]))
  lines = page.splitlines()
  assert lines[0] == "# demo.1.f30k: Demo, Table 1"
  assert "| VSE++ | paper | 50.00 | 400.00 |" in lines
  assert "| | jitr (2 seeds) | 49.50 ± 2.12 | 403.00 ± 2.83 |" in lines
  assert "| | difference | -0.50 | +3.00 |" in lines
  assert "| | jitr | not run | not run |" in lines
  assert "| | jitr | no seed yet | no seed yet |" in lines
  assert "- Quoted: quoted from another paper" in lines


def test_the_files_are_the_same_bytes_when_written_again(tmp_path):
  seeds = [{"full/i2t/R@1": 48.0, "full/rsum": 401.0}]
  comparison = compare(TABLE, [seeds, [], seeds])
  first = write_table_files(comparison, str(tmp_path / "a"))
  again = write_table_files(comparison, str(tmp_path / "b"))
  for kind in ("md", "json", "png"):
    with open(first[kind], "rb") as a, open(again[kind], "rb") as b:
      assert a.read() == b.read(), kind
  assert json.loads(open(first["json"]).read()) == comparison
  assert open(first["png"], "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_mean_recall_is_rsum_over_six():
  table = Table(**{**TABLE.__dict__, "metrics": ("mR",)})
  table = Table(**{**table.__dict__, "rows": (Row("CVSE", {"mR": 80.4}, (RUN,)),)})
  got = compare(table, [[{"full/rsum": 482.5}]])["rows"][0]["metrics"]["mR"]
  assert got["mean"] == round(482.5 / 6, 4) and got["difference"] == round(482.5 / 6 - 80.4, 4)


def test_an_official_checkpoint_has_its_own_line_and_difference():
  seeds = [{"full/i2t/R@1": 48.0, "full/rsum": 401.0}]
  got = compare(TABLE, [seeds, [], []], {0: {"full/i2t/R@1": 51.25, "full/rsum": 399.0}})
  cell = got["rows"][0]["metrics"]["i2t/R@1"]
  assert cell["official_checkpoint"] == 51.25 and cell["official_difference"] == 1.25
  assert [row["official_checkpoint"] for row in got["rows"]] == [True, False, False]
  lines = markdown(got).splitlines()
  at = lines.index("| VSE++ | paper | 50.00 | 400.00 |")
  assert lines[at + 1 : at + 4] == [
    "| | official checkpoint | 51.25 | 399.00 |",
    "| | its difference | +1.25 | -1.00 |",
    "| | jitr (1 seed) | 48.00 ± 0.00 | 401.00 ± 0.00 |",
  ]
