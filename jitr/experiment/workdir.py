"""A workdir's files that describe its run: ``config.json`` and where its data lives.

One workdir holds one run. ``jitr-train`` on a workdir that has a ``config.json``
resumes that run, so the new config must describe the same run:

* :func:`check_workdir` -- the whole resolved config is compared with ``config.json``
  (:func:`jitr.experiment.run_config.run_differences`); a difference in any field other
  than :data:`jitr.experiment.run_config.EXECUTION_FIELDS` and ``num_epochs`` is refused
  before anything is written, in one line listing the fields with their saved and new values
  (:func:`describe_differences`).
* :func:`check_num_epochs` -- ``num_epochs`` may be raised (the schedule is extended)
  or lowered, but not below the epochs the workdir's checkpoints already reach.
* :func:`record_config` -- after every check passed: writes ``config.json`` when
  absent, or sets its ``num_epochs`` to the new one when a resume changed it (one
  atomic replace); every other field keeps the value first written.
* :func:`write_config_once` -- ``config.json`` written only when absent.
* :func:`read_workdir_config` -- the saved config of a workdir;
  :func:`read_trained_config` -- the same, checked as a training config.
* :func:`data_dir` -- where a run keeps its TFDS data, relevance records and compile cache.

Why ``num_epochs`` may change: the learning-rate schedule (``optimizer.decay_epochs``)
and the loss terms' ``from_epoch`` / ``until_epoch`` count absolute epochs, and each
epoch's batches are seeded by the epoch, so a run extended from N to M epochs (or
resumed before epoch M < N and stopped there) trains exactly what a run started with
``num_epochs = M`` trains.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from typing import Any

import ml_collections

from jitr import fileio, paths
from jitr.experiment.run_config import (
  ABSENT,
  EARLIER_DEFAULTS,
  EPOCHS_FIELD,
  check_train_config,
  run_differences,
)

CONFIG_NAME = "config.json"

# At most this many differing fields are named in one error line ("and N more").
MAX_LISTED = 4
FIX = "use a new --workdir (or delete {workdir}) to start a different run"


def _show(value: Any) -> str:
  return "(absent)" if value is ABSENT else json.dumps(value, sort_keys=True)


def describe_differences(workdir: str, diffs: list[tuple[str, Any, Any]], fix: str = FIX) -> str:
  """The one-line refusal: ``workdir W was trained with F=old (this config: new); ...``,
  at most :data:`MAX_LISTED` fields then ``and N more``, ending with ``fix`` (how to start
  a different run; ``{workdir}`` is filled in)."""
  shown = [f"{path}={_show(old)} (this config: {_show(new)})" for path, old, new in diffs]
  if len(shown) > MAX_LISTED:
    shown = shown[:MAX_LISTED] + [f"and {len(shown) - MAX_LISTED} more"]
  return f"workdir {workdir} was trained with {'; '.join(shown)}; {fix.format(workdir=workdir)}"


def read_workdir_config(workdir: str) -> dict[str, Any] | None:
  """``workdir/config.json`` as a dict, ``None`` if absent.

  Raises:
    ValueError: the file is not UTF-8 JSON of an object (names the file and line).
  """
  path = os.path.join(workdir, CONFIG_NAME)
  if not paths.isfile(path):
    return None
  saved = fileio.read_json(path)
  if not isinstance(saved, dict):
    raise ValueError(f"{path}: expected a JSON object, got {type(saved).__name__}")
  return saved


def read_trained_config(workdir: str) -> ml_collections.ConfigDict | None:
  """``workdir/config.json`` as a config, checked as ``jitr-train`` checks a config
  (:func:`jitr.experiment.run_config.check_train_config`); ``None`` if absent. A field
  the file lacks (written by an earlier jitr) takes the value its run had
  (:data:`!jitr.experiment.run_config.EARLIER_DEFAULTS`).

  Raises:
    ValueError: the file is not a JSON object, or a field is missing, of the wrong type or
      out of range (one line naming the file and the field).
  """
  saved = read_workdir_config(workdir)
  if saved is None:
    return None
  config = ml_collections.ConfigDict({**EARLIER_DEFAULTS, **saved})
  try:
    check_train_config(config)
  except ValueError as err:
    path = os.path.join(workdir, CONFIG_NAME)
    raise ValueError(f"{path}: {err}") from None
  return config


def _as_json(config: Any) -> dict[str, Any]:
  return json.loads(config.to_json_best_effort())


def check_workdir(config: Any, workdir: str, fix: str = FIX) -> None:
  """Raises ``ValueError`` (:func:`describe_differences`, ending with ``fix``) when
  ``workdir`` has a ``config.json`` that differs from ``config`` in a field a resume may
  not change (:func:`jitr.experiment.run_config.run_differences`); a workdir without one
  passes."""
  saved = read_workdir_config(workdir)
  if saved is None:
    return
  diffs = run_differences(saved, _as_json(config))
  if diffs:
    raise ValueError(describe_differences(workdir, diffs, fix))


def saved_steps(workdir: str) -> list[int]:
  """The steps of the checkpoint folders under ``workdir/checkpoints/{latest,best}``
  (folders named by a whole number; orbax's unfinished ``*.orbax-checkpoint-tmp*`` are not)."""
  steps = []
  for kind in ("latest", "best"):
    folder = os.path.join(workdir, "checkpoints", kind)
    if paths.isdir(folder):
      steps += [int(name) for name in paths.listdir(folder) if name.isdigit()]
  return sorted(steps)


def epochs_reached(steps: Iterable[int], steps_per_epoch: int) -> int:
  """The epochs that the latest of ``steps`` has begun: ``ceil(max(steps) / steps_per_epoch)``
  (0 without steps); a run must train at least this many to hold those checkpoints."""
  last = max(steps, default=0)
  return math.ceil(last / steps_per_epoch)


def check_num_epochs(num_epochs: int, workdir: str, steps_per_epoch: int) -> None:
  """Raises ``ValueError`` when ``num_epochs`` ends before the epochs that ``workdir``'s
  checkpoints reach (:func:`epochs_reached`): such a run would report checkpoints
  trained past its own schedule."""
  steps = saved_steps(workdir)
  reached = epochs_reached(steps, steps_per_epoch)
  if num_epochs < reached:
    raise ValueError(
      f"config.num_epochs: expected at least {reached}, the epochs workdir {workdir} has "
      f"already trained (checkpoint step {max(steps)}, {steps_per_epoch} steps an epoch), "
      f"got {num_epochs}; {FIX.format(workdir=workdir)}"
    )


def write_config_once(config: Any, workdir: str) -> bool:
  """Writes ``workdir/config.json`` atomically unless it exists; returns whether it wrote."""
  path = os.path.join(workdir, CONFIG_NAME)
  if paths.exists(path):
    return False
  fileio.write_text_atomic(path, config.to_json_best_effort(indent=2))
  return True


def record_config(config: Any, workdir: str) -> bool:
  """Makes ``workdir/config.json`` describe the run of ``config`` (checked by
  :func:`check_workdir` and :func:`check_num_epochs`): written whole when absent; else,
  when ``num_epochs`` differs, the saved config with the new ``num_epochs``, replaced
  atomically (other fields keep their first values, field order and format kept).
  Returns whether it wrote."""
  if write_config_once(config, workdir):
    return True
  saved = read_workdir_config(workdir)
  new_epochs = _as_json(config).get(EPOCHS_FIELD, ABSENT)
  if new_epochs is ABSENT or (EPOCHS_FIELD in saved and saved[EPOCHS_FIELD] == new_epochs):
    return False
  saved[EPOCHS_FIELD] = new_epochs
  fileio.write_text_atomic(os.path.join(workdir, CONFIG_NAME), json.dumps(saved, indent=2))
  return True


def data_dir(config: Any, workdir: str) -> str:
  """``config.data_dir`` or ``<workdir>/../tfds`` (shared between runs)."""
  return config.data_dir or os.path.join(os.path.dirname(paths.absolute(workdir)), "tfds")
