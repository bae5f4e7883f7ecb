"""What a published table needs jitr to run: every run of its rows once per seed, where
each lives, the jitr-train command that trains it and how far it got.

A run of seed ``S`` lives in ``ROOT/RUN_NAME/seedS`` (:func:`workdir`), shared by every
table that needs the same run. It is *finished* once jitr-train wrote its
``metrics.json`` (the test split scored with its best checkpoint, written last),
*started* while only its ``config.json`` is there (a re-run of its command resumes from
the latest checkpoint), else *missing*.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import shlex
from collections.abc import Sequence

from jitr import paths
from jitr.papers.published import Run, Table

# the config file of every run: the papers' settings (its docstring lists the specs)
PAPER_CONFIG = "configs/paper.py"


class Status(enum.Enum):
  """How far a run of one seed got (:func:`status`)."""

  MISSING = "missing"
  STARTED = "started"
  FINISHED = "finished"


@dataclasses.dataclass(frozen=True)
class SeededRun:
  """``run`` trained with ``config.seed = seed`` in ``workdir``."""

  run: Run
  seed: int
  workdir: str


def workdir(root: str, run: Run, seed: int) -> str:
  """``ROOT/RUN_NAME/seedSEED``: the workdir of ``run``'s seed ``seed``."""
  return os.path.join(root, run.name, f"seed{seed}")


def seeded_runs(table: Table, root: str, seeds: int) -> list[SeededRun]:
  """Every run of ``table`` for the seeds from 0 to ``seeds`` − 1, seed by seed (seed 0 of
  every row first: a table with one seed of each row is worth reading early)."""
  return [
    SeededRun(run, seed, workdir(root, run, seed)) for seed in range(seeds) for run in table.runs()
  ]


def status(run: SeededRun) -> Status:
  """``FINISHED`` when ``metrics.json`` is in the workdir, ``STARTED`` when its
  ``config.json`` is, else ``MISSING``."""
  if paths.isfile(os.path.join(run.workdir, "metrics.json")):
    return Status.FINISHED
  if paths.isfile(os.path.join(run.workdir, "config.json")):
    return Status.STARTED
  return Status.MISSING


def to_train(runs: Sequence[SeededRun]) -> list[SeededRun]:
  """The runs of ``runs`` not finished (missing or started)."""
  return [r for r in runs if status(r) != Status.FINISHED]


def config_overrides(run: SeededRun, sets: Sequence[str]) -> list[str]:
  """The ``--config.FIELD=VALUE`` arguments of ``run``: its seed, the run's own fields,
  then ``sets`` (``FIELD=VALUE``, the command's ``--set``: the data folders, a BERT
  folder, smaller settings; given last, they win)."""
  fields = [("seed", str(run.seed)), *run.run.overrides]
  fields += [tuple(s.split("=", 1)) for s in sets]
  return [f"--config.{name}={value}" for name, value in fields]


def train_argv(run: SeededRun, sets: Sequence[str]) -> list[str]:
  """The jitr-train command that trains ``run`` (and resumes it when started)."""
  return [
    "jitr-train",
    f"--config={PAPER_CONFIG}:{run.run.spec}",
    f"--workdir={run.workdir}",
    *config_overrides(run, sets),
  ]


def shell_line(argv: Sequence[str]) -> str:
  """``argv`` as one line a POSIX shell runs as written."""
  return shlex.join(argv)


def check_sets(sets: Sequence[str]) -> None:
  """Each ``--set`` must read ``FIELD=VALUE`` (the field without ``config.``)."""
  for item in sets:
    name, equals, _ = item.partition("=")
    if not equals or not name or name.startswith(("config.", "-")):
      raise ValueError(
        f"--set={item}: expected FIELD=VALUE with a config field (e.g. "
        "precomp_root=/data/precomp or text.pretrained=/models/bert-base-uncased)"
      )


def check_folder(flag: str, path: str, holds: str) -> None:
  """Refuses, in one line naming ``flag`` (``--runs=VALUE``), a ``path`` where a folder
  (of ``holds``) is expected but a file is, at ``path`` or at a folder above it; a folder
  that does not exist yet passes (it is made when written)."""
  probe = path
  while probe:
    if paths.isdir(probe):
      return
    if paths.exists(probe):
      where = "is a file" if probe == path else f"lies under the file {probe}"
      raise ValueError(f"{flag}: {path} {where}; expected a folder ({holds})")
    parent = os.path.dirname(probe)
    if parent == probe or (paths.is_url(probe) and parent.count("/") < 3):  # a bucket's root
      return
    probe = parent
