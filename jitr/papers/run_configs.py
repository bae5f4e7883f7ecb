"""The config of a table's run, built as jitr-train builds it from the command
:func:`jitr.papers.plan.train_argv` prints (``configs/paper.py:SPEC`` and its
``--config.FIELD=VALUE`` arguments, parsed by ml_collections), which of jitr-tables'
``--set`` items each run takes (a table's runs differ: SGR has ``model.sim_dim``, VSE++
has not), and whether a run already in its workdir was trained with that config."""

from __future__ import annotations

import shlex
import warnings
from collections.abc import Sequence
from typing import Any

from absl import flags
from ml_collections import config_flags

from jitr.experiment.run_config import check_train_config, resolved_config
from jitr.experiment.workdir import check_workdir, read_workdir_config
from jitr.papers.config_files import resolve_config_argument, shipped_configs_dir
from jitr.papers.plan import SeededRun, Status, status, train_argv


def command_config(argv: Sequence[str]) -> Any:
  """The config jitr-train builds from its command line ``argv`` (``jitr-train
  --config=FILE:SPEC --config.FIELD=VALUE ...``; other flags are ignored; ``FILE`` found
  as jitr-train finds it: the shipped configs unless ``./FILE`` exists). Raises what
  absl, ml_collections or the config file raise."""
  argv = list(argv)
  at = next((i for i, a in enumerate(argv) if a.startswith("--config=")), None)
  if at is None:
    raise ValueError(f"{shlex.join(argv)}: expected a --config=FILE[:SPEC] argument")
  argv[at] = "--config=" + resolve_config_argument(argv[at].split("=", 1)[1], shipped_configs_dir())
  argv = [argv[0], *(a for a in argv[1:] if a.startswith("--config"))]  # not --workdir
  values = flags.FlagValues()
  holder = config_flags.DEFINE_config_file("config", None, "", flag_values=values, sys_argv=argv)
  with warnings.catch_warnings():  # ml_collections loads the file with load_module()
    warnings.simplefilter("ignore", DeprecationWarning)
    values(argv)
  return holder.value


def parsed_config(seeded: SeededRun, sets: Sequence[str]) -> Any:
  """The config jitr-train builds from :func:`train_argv` of ``seeded`` and ``sets`` (the
  shipped configs/paper.py unless ./configs/paper.py exists); a field it does not take is
  a ``ValueError`` naming the run."""
  try:
    return command_config(train_argv(seeded, sets))
  except Exception as err:  # noqa: BLE001 - absl's, ml_collections' and the file's errors
    raise ValueError(f"{seeded.run.name} ({seeded.run.spec}): {err}") from None


def has_field(config: Any, dotted: str) -> bool:
  """Whether ``config`` has the field ``dotted`` (``model.sim_dim``)."""
  node = config
  for part in dotted.split("."):
    try:
      node = node[part]
    except (KeyError, TypeError, AttributeError):
      return False
  return True


# how to go on when a run's workdir was trained with other settings
FIX = "give the --set values it was trained with, another --runs folder, or delete {workdir}"

_APPLICABLE: dict[tuple, list[str]] = {}


def applicable_sets(seeded: SeededRun, sets: Sequence[str]) -> list[str]:
  """The items of ``sets`` (``FIELD=VALUE``) whose field ``seeded``'s config has; found
  once per run."""
  key = (seeded.run, tuple(sets))
  if key not in _APPLICABLE:
    config = parsed_config(seeded, [])
    _APPLICABLE[key] = [s for s in sets if has_field(config, s.split("=", 1)[0])]
  return _APPLICABLE[key]


def check_sets_apply(runs: Sequence[SeededRun], sets: Sequence[str]) -> None:
  """Refuses an item of ``sets`` whose field no run has (a misspelt field) in one line; a
  table without runs (printed reference lines only) sets nothing."""
  if not runs:
    return
  used = {s for r in runs for s in applicable_sets(r, sets)}
  for item in sets:
    if item not in used:
      raise ValueError(
        f"--set={item}: no run of the table has the config field {item.split('=', 1)[0]!r}"
      )


def run_config(seeded: SeededRun, sets: Sequence[str]) -> Any:
  """``seeded``'s config with the items of ``sets`` it takes, checked as jitr-train checks
  it (:func:`jitr.experiment.run_config.check_train_config`)."""
  config = parsed_config(seeded, applicable_sets(seeded, sets))
  _check(seeded, config)
  return config


def _check(seeded: SeededRun, config: Any) -> None:
  """:func:`jitr.experiment.run_config.check_train_config` of ``config``, its refusal a
  ``ValueError`` naming the run."""
  try:
    check_train_config(config)
  except ValueError as err:
    raise ValueError(f"{seeded.run.name} ({seeded.run.spec}): {err}") from None


# what stands for a precomp_root not given where nothing reads the data (check_configs)
DATA_NOT_READ = "(the data folder: not read here)"


def check_configs(runs: Sequence[SeededRun], sets: Sequence[str], *, data: bool) -> None:
  """Refuses, in :func:`run_config`'s one line naming the run, a run whose config with
  ``sets`` jitr-train would refuse (``batch_size=abc``, ``num_epochs=0``,
  ``model.embed_dim=-1``), so that no action prints or trains a command that fails.
  ``data=False`` (actions that train nothing and print no training command) lets a
  precomp run without ``precomp_root`` pass; every other field is checked."""
  for seeded in runs:
    config = parsed_config(seeded, applicable_sets(seeded, sets))
    if not data and "precomp_root" in config and not config.precomp_root:
      config.precomp_root = DATA_NOT_READ
    _check(seeded, config)


def check_runs_match(runs: Sequence[SeededRun], sets: Sequence[str]) -> None:
  """Refuses, in one line naming the run, a run whose workdir holds a ``config.json`` that
  differs from the config this command builds for it: a field a resume may not change
  (:func:`jitr.experiment.workdir.check_workdir`, as jitr-train's own refusal), or, once
  finished, ``num_epochs`` (a finished run is not trained again, so the table would
  report epochs the command did not ask for). A missing run passes."""
  for seeded in runs:
    state = status(seeded)
    if state == Status.MISSING:
      continue
    config = resolved_config(run_config(seeded, sets))
    name = f"{seeded.run.name} seed {seeded.seed}"
    try:
      check_workdir(config, seeded.workdir, fix=FIX)
    except ValueError as err:
      raise ValueError(f"{name}: {err}") from None
    trained = read_workdir_config(seeded.workdir).get("num_epochs")
    if state == Status.FINISHED and trained != config.num_epochs:
      raise ValueError(
        f"{name}: {seeded.workdir} finished {trained} epochs, this command asks for "
        f"num_epochs={config.num_epochs}; {FIX.format(workdir=seeded.workdir)}"
      )
