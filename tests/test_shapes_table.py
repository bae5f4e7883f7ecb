"""``scripts/shapes_table.py``'s pure parts: the run plan, mean ± std, the spread test and
the tables (the training itself is a script run, not a test)."""

import importlib.util
import math
import os
import statistics
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


@pytest.fixture(scope="module")
def table():
  spec = importlib.util.spec_from_file_location(
    "shapes_table", os.path.join(ROOT, "scripts", "shapes_table.py")
  )
  module = importlib.util.module_from_spec(spec)
  sys.modules["shapes_table"] = module  # dataclasses look their module up there
  spec.loader.exec_module(module)
  yield module
  del sys.modules["shapes_table"]


def test_plan_puts_each_teacher_before_its_students_seed_major(table):
  Run = table.Run
  runs = table.plan(["sndcg", "hmean"], ["vse"], 2)
  assert runs == [
    Run("sndcg", "vse", 0),
    Run("triplet", "vse", 0),  # hmean's teacher, added although not asked
    Run("hmean", "vse", 0),
    Run("sndcg", "vse", 1),
    Run("triplet", "vse", 1),
    Run("hmean", "vse", 1),
  ]
  assert table.plan(["triplet", "teacher"], ["vse"], 1) == [
    Run("triplet", "vse", 0),
    Run("teacher", "vse", 0),
  ]
  # the contrastive variants train only the pixel towers; the others train every network
  assert table.plan(["infonce", "triplet"], ["vse", "vit"], 1) == [
    Run("triplet", "vse", 0),
    Run("infonce", "vit", 0),
    Run("triplet", "vit", 0),
  ]


def test_workdirs_and_config_specs(table):
  Run = table.Run
  assert Run("triplet", "vse", 0).workdir("r") == os.path.join("r", "triplet")
  assert Run("sndcg", "vsrn", 2).workdir("r") == os.path.join("r", "sndcg_vsrn_seed2")
  assert Run("sndcg", "vsrn", 2).config_spec() == "sndcg,vsrn"
  assert Run("hmean", "vse", 1).teacher() == Run("triplet", "vse", 1)
  assert Run("sndcg", "vse", 1).teacher() is None


def test_command_passes_seed_and_the_teacher_of_the_same_seed(table):
  cmd = table.command(table.Run("hmean", "vse", 2), "r", "d", ["config.num_epochs=1"])
  assert "--config.seed=2" in cmd and "--workdir=" + os.path.join("r", "hmean_seed2") in cmd
  teacher = os.path.join("r", "triplet_seed2")
  assert f"--config.graded.relevance=hmean:vectors:sentence|teacher:{teacher}" in cmd
  assert cmd[-1] == "--config.num_epochs=1"


def test_mean_std_is_the_sample_std_and_spread_is_the_sum_of_stds(table):
  values = [1.0, 2.0, 4.5]
  mean, std = table.mean_std(values)
  assert mean == pytest.approx(statistics.mean(values))
  assert std == pytest.approx(statistics.stdev(values))
  assert table.mean_std([3.0]) == (3.0, 0.0)
  assert table.exceeds_spread((10.0, 1.0), (7.9, 1.0))
  assert not table.exceeds_spread((10.0, 1.0), (8.0, 1.5))


def test_format_tables_gives_mean_std_and_starred_differences(table):
  keys = [key for key, _ in table.RESULT_KEYS]
  base = [{key: 10.0 + s for key in keys} for s in (0, 1, 2)]  # mean 11, std 1
  near = [{key: 11.5 + s for key in keys} for s in (0, 1, 2)]  # +1.5, within 2
  far = [{key: 20.0 + s for key in keys} for s in (0, 1, 2)]  # +10, beyond
  text = table.format_tables([("base", base, [100.0]), ("near", near, []), ("far", far, [])])
  lines = text.splitlines()
  assert lines[0].startswith("| loss | seeds | i2t R@1 |") and lines[0].endswith("| train s |")
  assert lines[2] == "| base | 3 | " + " | ".join(["11.00 ± 1.00"] * len(keys)) + " | 100 |"
  assert lines[4].startswith("| far | 3 | 21.00 ± 1.00 |") and lines[4].endswith("|  |")
  assert lines[-2] == "| near | " + " | ".join(["+1.50"] * len(keys)) + " |"
  assert lines[-1] == "| far | " + " | ".join(["+10.00*"] * len(keys)) + " |"
  single = table.format_tables([("one", [{keys[0]: 1.234}], [])]).splitlines()
  assert "seeds" not in single[0] and single[2].startswith("| one | 1.23 | nan |")
  assert math.isnan(table.mean_std([math.nan])[0])
