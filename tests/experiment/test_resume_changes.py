"""A resumed run cannot change what it is: ``jitr-train`` on a workdir refuses a config
that differs from its ``config.json`` (another loss, seed, margin, a ``num_epochs`` below
the epochs trained), accepts an extended schedule (and records it) and a change of how
the run is executed (logging cadence, evaluation batch, prefetch).

Unit tests of :mod:`jitr.experiment.workdir` on plain dicts first, then
:func:`jitr.experiment.train_and_evaluate` on a finished tiny precomp workdir
(tests/apps/test_faults.py has the accepted longer schedule and the SIGTERM resume)."""

import json

import ml_collections
import pytest

from jitr import experiment
from jitr.experiment import workdir as workdir_lib
from jitr.experiment.run_config import ABSENT, run_differences
from tests.file_fixtures import finished_workdir, precomp_config, snapshot, write_precomp

SAVED = {
  "seed": 0,
  "num_epochs": 3,
  "log_every_steps": 50,
  "eval_batch_size": 500,
  "prefetch": 2,
  "compilation_cache": True,
  "data_dir": "/data/a",
  "backend": "shard_map",
  "distributed": {"coordinator_address": "", "num_processes": 1, "process_id": 0},
  "graded": {"relevance": "vectors:sentence"},
  "loss": {"triplet": {"weight": 1.0, "margin": 0.2, "mining": "max"}},
  "optimizer": {"name": "adam", "learning_rate": 5e-4, "decay_epochs": [3]},
}


def _changed(**fields) -> dict:
  """A copy of ``SAVED`` with dotted ``fields`` (``__`` for ``.``) set; ``ABSENT`` deletes."""
  out = json.loads(json.dumps(SAVED))
  for dotted, value in fields.items():
    *parents, last = dotted.split("__")
    tree = out
    for key in parents:
      tree = tree[key]
    if value is ABSENT:
      del tree[last]
    else:
      tree[last] = value
  return out


# ---------------------------------------------------------------- the comparison, on dicts
def test_the_same_config_has_no_differences():
  assert run_differences(SAVED, _changed()) == []


@pytest.mark.parametrize(
  "fields",
  [
    {"num_epochs": 10},
    {"num_epochs": 1},  # bounded by the checkpoints (check_num_epochs), not here
    {"log_every_steps": 1},
    {"eval_batch_size": 16},
    {"prefetch": 0},
    {"compilation_cache": False},
    {"data_dir": "/data/b"},
    {"precomp_root": "/data/moved"},
    {"backend": "pmap"},
    {"distributed__num_processes": 2, "distributed__process_id": 1},
  ],
)
def test_execution_fields_and_num_epochs_may_change(fields):
  assert run_differences(SAVED, _changed(**fields)) == []


@pytest.mark.parametrize(
  ("fields", "expected"),
  [
    ({"seed": 1}, [("seed", 0, 1)]),
    ({"loss__triplet__margin": 0.3}, [("loss.triplet.margin", 0.2, 0.3)]),
    ({"optimizer__learning_rate": 1e-4}, [("optimizer.learning_rate", 5e-4, 1e-4)]),
    ({"optimizer__decay_epochs": [2]}, [("optimizer.decay_epochs", [3], [2])]),
    ({"graded__relevance": "oracle"}, [("graded.relevance", "vectors:sentence", "oracle")]),
    # a field a later version adds, or one the saved config has and this one lacks
    ({"calibration": {"relevance": ""}}, [("calibration", ABSENT, {"relevance": ""})]),
    ({"graded": ABSENT}, [("graded", {"relevance": "vectors:sentence"}, ABSENT)]),
    # a field whose name starts with an execution field's is not one
    ({"backend_options": 1}, [("backend_options", ABSENT, 1)]),
    ({"seed": False}, [("seed", 0, False)]),  # False is not 0
  ],
)
def test_every_other_field_must_match(fields, expected):
  assert run_differences(SAVED, _changed(**fields)) == expected


def test_another_loss_is_one_entry_per_term():
  other = _changed(loss={"adaptive_listwise": {"weight": 1.0, "sharpness": 0.5}})
  assert run_differences(SAVED, other) == [
    ("loss.adaptive_listwise", ABSENT, {"weight": 1.0, "sharpness": 0.5}),
    ("loss.triplet", SAVED["loss"]["triplet"], ABSENT),
  ]


def test_lists_and_tuples_with_the_same_items_are_equal():
  assert run_differences(SAVED, _changed(optimizer__decay_epochs=(3,))) == []


def test_the_error_line_lists_a_few_fields_then_how_many_more():
  diffs = run_differences(
    SAVED,
    _changed(seed=1, loss__triplet__margin=0.3, loss__triplet__mining="sum", graded={}),
  )
  assert workdir_lib.describe_differences("/w", diffs[:2]) == (
    'workdir /w was trained with graded.relevance="vectors:sentence" (this config: (absent)); '
    "loss.triplet.margin=0.2 (this config: 0.3); "
    "use a new --workdir (or delete /w) to start a different run"
  )
  many = diffs + [(f"model.f{i}", i, i + 1) for i in range(3)]
  line = workdir_lib.describe_differences("/w", many)
  assert line.count("(this config:") == workdir_lib.MAX_LISTED == 4
  assert line.endswith("; and 3 more; use a new --workdir (or delete /w) to start a different run")
  assert "\n" not in line


@pytest.mark.parametrize(
  ("steps", "expected"), [([], 0), ([5], 1), ([5, 10, 15], 3), ([11], 3), ([10, 11], 3)]
)
def test_epochs_reached_counts_a_begun_epoch(steps, expected):
  assert workdir_lib.epochs_reached(steps, 5) == expected


def test_num_epochs_may_not_end_before_the_saved_checkpoints(tmp_path):
  for kind, step in (("latest", 10), ("latest", 15), ("best", 10)):
    (tmp_path / "checkpoints" / kind / str(step)).mkdir(parents=True)
  (tmp_path / "checkpoints" / "latest" / "20.orbax-checkpoint-tmp-1").mkdir()  # unfinished
  assert workdir_lib.saved_steps(str(tmp_path)) == [10, 10, 15]
  for num_epochs in (3, 4):
    workdir_lib.check_num_epochs(num_epochs, str(tmp_path), 5)
  with pytest.raises(ValueError) as err:
    workdir_lib.check_num_epochs(2, str(tmp_path), 5)
  assert str(err.value) == (
    f"config.num_epochs: expected at least 3, the epochs workdir {tmp_path} has already "
    "trained (checkpoint step 15, 5 steps an epoch), got 2; use a new --workdir (or delete "
    f"{tmp_path}) to start a different run"
  )
  workdir_lib.check_num_epochs(1, str(tmp_path / "new"), 5)  # nothing trained yet


def test_record_config_writes_once_and_then_only_a_new_num_epochs(tmp_path):
  config = ml_collections.ConfigDict(SAVED)
  assert workdir_lib.record_config(config, str(tmp_path))
  first = (tmp_path / "config.json").read_bytes()
  assert json.loads(first) == json.loads(config.to_json_best_effort())
  config.log_every_steps = 1  # an execution field: config.json keeps the first value
  assert not workdir_lib.record_config(config, str(tmp_path))
  assert (tmp_path / "config.json").read_bytes() == first
  config.num_epochs = 5
  assert workdir_lib.record_config(config, str(tmp_path))
  text = (tmp_path / "config.json").read_text()
  assert json.loads(text) == {**json.loads(first), "num_epochs": 5}
  assert text == first.decode().replace('"num_epochs": 3', '"num_epochs": 5')  # format kept
  assert [p.name for p in tmp_path.iterdir()] == ["config.json"]  # no temporary left


def test_check_workdir_compares_the_whole_config(tmp_path):
  config = ml_collections.ConfigDict(SAVED)
  workdir_lib.record_config(config, str(tmp_path))
  config.num_epochs, config.log_every_steps, config.data_dir = 9, 7, "/data/b"
  workdir_lib.check_workdir(config, str(tmp_path))
  config.loss.triplet.mining = "sum"
  with pytest.raises(ValueError, match=r'loss.triplet.mining="max" \(this config: "sum"\); use'):
    workdir_lib.check_workdir(config, str(tmp_path))


# ------------------------------------------------------- train_and_evaluate on a finished run
def test_another_loss_on_a_finished_workdir_is_refused_and_changes_nothing(tmp_path):
  """The whole config is compared: a loss swapped for another (CMAL2R instead of the
  triplet) is refused before anything is written, naming both terms."""
  write_precomp(tmp_path / "data")
  workdir = tmp_path / "run"
  before = finished_workdir(workdir, precomp_config(tmp_path / "data"))
  config = precomp_config(tmp_path / "data")
  config.loss = ml_collections.ConfigDict({"adaptive_listwise": {"weight": 1.0}})
  with pytest.raises(ValueError) as err:
    experiment.train_and_evaluate(config, str(workdir))
  assert str(err.value) == (
    f"workdir {workdir} was trained with loss.adaptive_listwise=(absent) (this config: "
    f'{{"weight": 1.0}}); loss.triplet={{"margin": 0.2, "weight": 1.0}} (this config: '
    f"(absent)); use a new --workdir (or delete {workdir}) to start a different run"
  )
  assert snapshot(workdir) == before


def test_fewer_epochs_than_trained_are_refused_and_change_nothing(tmp_path):
  """Lowering ``num_epochs`` below the epochs the checkpoints reach is refused once the
  steps of an epoch are known (after loading the data), before anything is written."""
  write_precomp(tmp_path / "data")
  workdir = tmp_path / "run"
  config = precomp_config(tmp_path / "data")
  config.num_epochs = 3
  finished_workdir(workdir, config)
  (workdir / "checkpoints" / "latest" / "6").rename(workdir / "checkpoints" / "latest" / "12")
  before = snapshot(workdir)
  config.num_epochs = 1
  with pytest.raises(ValueError) as err:
    experiment.train_and_evaluate(config, str(workdir))
  assert str(err.value).startswith(
    f"config.num_epochs: expected at least 2, the epochs workdir {workdir} has already "
    "trained (checkpoint step 12, 6 steps an epoch), got 1; "
  )
  assert snapshot(workdir) == before
