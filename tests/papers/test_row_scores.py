"""Where a row's scores come from: the jitr-eval command and report of its workdirs (an
ensemble's in its first member), reused only while newer than every member's run."""

import json
import os

from jitr.papers.published import Row, Run, Table
from jitr.papers.row_scores import eval_command, report_path, stored_scores

SGR, SAF = Run("f30k_sgr_triplet", "f30k,sgr,triplet"), Run("f30k_saf_triplet", "f30k,saf,triplet")


def _table(protocol: str) -> Table:
  rows = (Row("SGRAF", {"rsum": 1.0}, (SGR, SAF)),)
  return Table("demo.1.f30k", "Demo", "Table 1", "", protocol, ("rsum",), rows, "")


def test_an_ensemble_row_is_the_mean_of_its_members_scored_by_the_first():
  assert eval_command(_table("full"), ["/r/sgr", "/r/saf"]) == [
    "jitr-eval",
    "--workdir=/r/sgr",
    "--split=test",
    "--ensemble=/r/saf",
    "--protocol=official",
  ]
  assert report_path(_table("folds"), ["/r/sgr", "/r/saf"]) == (
    "/r/sgr/eval_test_ensemble_official/metrics.json"
  )
  assert report_path(_table("class"), ["/r/w"]) == "/r/w/eval_test/metrics.json"
  assert eval_command(_table("class"), ["/r/w"])[-1] == "--protocol=jitr"


def test_a_report_is_reused_only_while_newer_than_every_members_run(tmp_path):
  members = [tmp_path / "sgr", tmp_path / "saf"]
  for m in members:
    m.mkdir()
    (m / "metrics.json").write_text("{}")
    os.utime(m / "metrics.json", (100, 100))
  table = _table("full")
  assert stored_scores(table, [str(m) for m in members]) is None  # none written yet
  report = tmp_path / "sgr" / "eval_test_ensemble_official" / "metrics.json"
  report.parent.mkdir()
  report.write_text(json.dumps({"full/rsum": 412.5}))
  os.utime(report, (200, 200))
  assert stored_scores(table, [str(m) for m in members]) == {"full/rsum": 412.5}
  os.utime(members[1] / "metrics.json", (300, 300))  # SAF trained again since
  assert stored_scores(table, [str(m) for m in members]) is None
