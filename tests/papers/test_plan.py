"""A table's runs: one per run and seed, their workdirs, status and jitr-train lines."""

import shlex

import pytest

from jitr.papers import plan
from jitr.papers.published import Row, Run, Table

VSE = Run("f30k_vsepp_triplet", "f30k,vsepp,triplet")
SGR = Run("f30k_sgr_triplet", "f30k,sgr,triplet")
SAF = Run("f30k_saf_soft", "f30k,saf,sam", (("loss.sam.sampling", "soft"),))
TABLE = Table(
  name="demo.1.f30k",
  paper="Demo",
  table="Table 1",
  caption="",
  protocol="full",
  metrics=("rsum",),
  rows=(
    Row("SGR", {"rsum": 1.0}, (SGR,)),
    Row("SGRAF", {"rsum": 1.0}, (SGR, SAF)),
    Row("VSE++", {"rsum": 1.0}, (VSE,)),
    Row("quoted", {"rsum": 1.0}),
  ),
  source="",
)


def test_each_run_once_per_seed_seed_by_seed():
  runs = plan.seeded_runs(TABLE, "/r", 2)
  assert [(r.run.name, r.seed) for r in runs] == [
    ("f30k_sgr_triplet", 0),
    ("f30k_saf_soft", 0),
    ("f30k_vsepp_triplet", 0),
    ("f30k_sgr_triplet", 1),
    ("f30k_saf_soft", 1),
    ("f30k_vsepp_triplet", 1),
  ]
  assert runs[4].workdir == "/r/f30k_saf_soft/seed1"


def test_the_train_line_sets_the_seed_then_the_runs_fields_then_the_sets():
  run = plan.SeededRun(SAF, 2, "/r/f30k saf/seed2")
  argv = plan.train_argv(run, ["precomp_root=/data", "loss.sam.sampling=hard"])
  assert argv == [
    "jitr-train",
    "--config=configs/paper.py:f30k,saf,sam",
    "--workdir=/r/f30k saf/seed2",
    "--config.seed=2",
    "--config.loss.sam.sampling=soft",
    "--config.precomp_root=/data",
    "--config.loss.sam.sampling=hard",
  ]
  assert shlex.split(plan.shell_line(argv)) == argv


def test_status_follows_the_workdirs_files(tmp_path):
  run = plan.SeededRun(VSE, 0, str(tmp_path / "w"))
  assert plan.status(run) is plan.Status.MISSING
  (tmp_path / "w").mkdir()
  (tmp_path / "w" / "config.json").write_text("{}")
  assert plan.status(run) is plan.Status.STARTED
  (tmp_path / "w" / "metrics.json").write_text("{}")
  assert plan.status(run) is plan.Status.FINISHED


@pytest.mark.parametrize("bad", ["seed", "=1", "config.seed=1", "--config.seed=1"])
def test_a_set_that_is_not_field_equals_value_is_one_line(bad):
  with pytest.raises(ValueError, match=r"^--set=.*: expected FIELD=VALUE"):
    plan.check_sets([bad])
