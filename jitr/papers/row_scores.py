"""jitr's scores of a published row for one seed: jitr-eval of the row's workdirs on the
test split, with the protocol of the paper's table.

A row of one run is scored on that workdir's best checkpoint; a row of several runs (an
ensemble, e.g. SGRAF) on the mean of their similarity matrices (``jitr-eval --ensemble``).
Recall@K tables use the official protocol (``--protocol=official``: the official
``evaluation.py``'s ranks, COCO's five 1K folds and 5K), class-labelled tables jitr's
(class MAP). The report jitr-eval writes (``<first workdir>/eval_test[_ensemble][_official]
/metrics.json``) is read back when it is newer than every member's ``metrics.json``
(written when its training finished), so a table is scored once per finished run. A
report that cannot be read back (not UTF-8, not JSON, not an object holding a number for
each of the table's metrics: a damaged file) is treated as absent: one line says so and
the row is scored again, which writes the report anew.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from jitr import fileio, paths
from jitr.experiment import ExtraMetrics, SemanticSource, evaluate_workdir
from jitr.papers.pooled_scores import UNDERLYING, pooled_scores
from jitr.papers.published import PROTOCOLS, Table
from jitr.papers.validation_scores import efficiency_scores

SPLIT = "test"
# what a report holds
EXPECTED = "the JSON object of metrics jitr-eval writes"


def eval_command(table: Table, workdirs: Sequence[str]) -> list[str]:
  """The jitr-eval command that scores a row of ``table`` trained in ``workdirs``."""
  argv = ["jitr-eval", f"--workdir={workdirs[0]}", f"--split={SPLIT}"]
  if len(workdirs) > 1:
    argv.append(f"--ensemble={','.join(workdirs[1:])}")
  argv.append(f"--protocol={PROTOCOLS[table.protocol].evaluation}")
  if table.protocol == "eccv":
    argv.append("--eccv")
  return [*argv, f"--semantic={table.semantic}"] if table.semantic else argv


def report_path(table: Table, workdirs: Sequence[str]) -> str:
  """Where jitr-eval writes the metrics of :func:`eval_command`."""
  suffix = "_ensemble" if len(workdirs) > 1 else ""
  if PROTOCOLS[table.protocol].evaluation == "official":
    suffix += "_official"
  return os.path.join(workdirs[0], f"eval_{SPLIT}{suffix}", "metrics.json")


def read_report(table: Table, path: str) -> dict[str, float]:
  """The metrics of the jitr-eval report at ``path``; one ``ValueError`` line naming the
  file when it is not UTF-8 JSON of an object holding a number for every report key of
  ``table``'s metrics (:meth:`~jitr.papers.published.Table.report_keys`)."""
  metrics = fileio.read_json(path)
  if not isinstance(metrics, dict):
    raise ValueError(f"{path}: a JSON {fileio.json_kind(metrics)}; expected {EXPECTED}")
  for key in dict.fromkeys(k for m in table.metrics for k in table.report_keys(m)):
    if key not in metrics:
      raise ValueError(f"{path}: no {key!r}; expected {EXPECTED}")
    value = metrics[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
      raise ValueError(f"{path}: {key!r} is {value!r}, not a number; expected {EXPECTED}")
  return metrics


def _say_on_stderr(line: str) -> None:
  sys.stderr.write(line + "\n")


def stored_scores(
  table: Table,
  workdirs: Sequence[str],
  trained: str = "metrics.json",
  say: Callable[[str], None] = _say_on_stderr,
) -> dict[str, float] | None:
  """The metrics of a report jitr-eval already wrote for ``workdirs`` that is newer than
  each member's ``trained`` file (``metrics.json``: written when its training finished;
  ``import.json`` for an imported official checkpoint); ``None`` when there is none, it is
  older, or it cannot be read back (:func:`read_report`: then ``say`` gets one line naming
  the file, what is wrong with it and that the row is scored again)."""
  path = report_path(table, workdirs)
  if not paths.isfile(path):
    return None
  written = paths.mtime(path)
  trained_at = [paths.mtime(os.path.join(w, trained)) for w in workdirs]
  if any(t > written for t in trained_at):
    return None
  try:
    return read_report(table, path)
  except ValueError as err:
    say(f"{err}; a damaged report: scoring the row again")
    return None


def score_row(
  table: Table,
  workdirs: Sequence[str],
  trained: str = "metrics.json",
  say: Callable[[str], None] = _say_on_stderr,
) -> dict[str, float]:
  """The test metrics of the row in ``workdirs`` (:func:`stored_scores`, else jitr-eval's
  :func:`~jitr.experiment.evaluate_workdir`, which also writes the report; ``say``: where
  a damaged report is said); a ``validation`` table's from the runs' validation histories
  (:func:`~jitr.papers.validation_scores.efficiency_scores`), a ``pooled_*`` table's from
  each run scored alone (:func:`~jitr.papers.pooled_scores.pooled_scores`)."""
  if table.protocol == "validation":  # the runs' validation histories, no evaluation
    return efficiency_scores(workdirs)
  if table.protocol in UNDERLYING:  # each run alone, their recalls pooled
    return pooled_scores(table, workdirs, lambda t, w: score_row(t, w, trained, say))
  stored = stored_scores(table, workdirs, trained, say)
  if stored is not None:
    return stored
  eccv = table.protocol == "eccv"
  # a table with NCS columns: its scores (jitr-eval's --semantic); ECCV Caption's positives
  extra = ExtraMetrics(SemanticSource(table.semantic), eccv=eccv)
  evaluate_workdir(
    workdirs[0],
    split=SPLIT,
    ensemble=list(workdirs[1:]),
    protocol=PROTOCOLS[table.protocol].evaluation,
    num_queries=0,
    **({"extra": extra} if table.semantic or eccv else {}),
  )
  return read_report(table, report_path(table, workdirs))
