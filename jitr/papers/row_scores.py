"""jitr's scores of a published row for one seed: jitr-eval of the row's workdirs on the
test split, with the protocol of the paper's table.

A row of one run is scored on that workdir's best checkpoint; a row of several runs (an
ensemble, e.g. SGRAF) on the mean of their similarity matrices (``jitr-eval --ensemble``).
Recall@K tables use the official protocol (``--protocol=official``: the official
``evaluation.py``'s ranks, COCO's five 1K folds and 5K), class-labelled tables jitr's
(class MAP). The report jitr-eval writes (``<first workdir>/eval_test[_ensemble][_official]
/metrics.json``) is read back when it is newer than every member's ``metrics.json``
(written when its training finished), so a table is scored once per finished run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from jitr import paths
from jitr.experiment import evaluate_workdir
from jitr.papers.published import EVAL_PROTOCOL, Table

SPLIT = "test"


def eval_command(table: Table, workdirs: Sequence[str]) -> list[str]:
  """The jitr-eval command that scores a row of ``table`` trained in ``workdirs``."""
  argv = ["jitr-eval", f"--workdir={workdirs[0]}", f"--split={SPLIT}"]
  if len(workdirs) > 1:
    argv.append(f"--ensemble={','.join(workdirs[1:])}")
  return [*argv, f"--protocol={EVAL_PROTOCOL[table.protocol]}"]


def report_path(table: Table, workdirs: Sequence[str]) -> str:
  """Where jitr-eval writes the metrics of :func:`eval_command`."""
  suffix = "_ensemble" if len(workdirs) > 1 else ""
  if EVAL_PROTOCOL[table.protocol] == "official":
    suffix += "_official"
  return os.path.join(workdirs[0], f"eval_{SPLIT}{suffix}", "metrics.json")


def stored_scores(
  table: Table, workdirs: Sequence[str], trained: str = "metrics.json"
) -> dict[str, float] | None:
  """The metrics of a report jitr-eval already wrote for ``workdirs`` that is newer than
  each member's ``trained`` file (``metrics.json``: written when its training finished;
  ``import.json`` for an imported official checkpoint); ``None`` when there is none (or it
  is older)."""
  path = report_path(table, workdirs)
  if not paths.isfile(path):
    return None
  written = paths.mtime(path)
  trained_at = [paths.mtime(os.path.join(w, trained)) for w in workdirs]
  if any(t > written for t in trained_at):
    return None
  with paths.open(path, encoding="utf-8") as f:
    return json.load(f)


def score_row(
  table: Table, workdirs: Sequence[str], trained: str = "metrics.json"
) -> dict[str, float]:
  """The test metrics of the row in ``workdirs`` (:func:`stored_scores`, else jitr-eval's
  :func:`~jitr.experiment.evaluate_workdir`, which also writes the report)."""
  stored = stored_scores(table, workdirs, trained)
  if stored is not None:
    return stored
  evaluate_workdir(
    workdirs[0],
    split=SPLIT,
    ensemble=list(workdirs[1:]),
    protocol=EVAL_PROTOCOL[table.protocol],
    num_queries=0,
  )
  with paths.open(report_path(table, workdirs), encoding="utf-8") as f:
    return json.load(f)
