"""jitr-tables' ``--action=run``: the runs of a table not finished, trained one after the
other in this process, each as jitr-train trains it; a run stopped by a signal (saved)
ends them with :class:`RunStopped`."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Sequence

from jitr.experiment import train_and_evaluate
from jitr.papers.plan import SeededRun, to_train
from jitr.papers.printed_plan import duration
from jitr.papers.run_configs import run_config
from jitr.papers.table_options import say
from jitr.training import reporting


class RunStopped(Exception):  # noqa: N818 - what happened, not an error of the command
  """A run of the table stopped by ``stop_signal`` (SIGTERM, SIGINT) after saving its
  latest checkpoint at ``step``; ``run`` names it (``RUN_NAME seed S``)."""

  def __init__(self, run: str, stop_signal: int | None, step: int | None):
    super().__init__(f"{run} stopped by signal {stop_signal} at step {step}")
    self.run, self.stop_signal, self.step = run, stop_signal, step


def train_runs(runs: Sequence[SeededRun], sets: Sequence[str]) -> None:
  """Trains every run not finished, in order, in this process (every config checked
  first): says which run and the table's ETA from the runs trained so far; jitr-train's
  own lines follow. A run stopped by SIGTERM or Ctrl-C (saved) raises :class:`RunStopped`."""
  todo = to_train(runs)
  configs = [run_config(r, sets) for r in todo]
  reporting.quiet_library_info_logs()
  spent: list[float] = []
  for i, (run, config) in enumerate(zip(todo, configs), 1):
    eta = ""
    if spent:
      eta = f"; the table's ETA {duration(sum(spent) / len(spent) * (len(todo) - i + 1))}"
    say(f"run {i}/{len(todo)}: {run.run.name} seed {run.seed}{eta}")
    start = time.monotonic()
    with contextlib.redirect_stdout(sys.stderr):  # stdout: the table alone
      result = train_and_evaluate(config, run.workdir)
    if not result.finished:
      raise RunStopped(f"{run.run.name} seed {run.seed}", result.stop_signal, result.step)
    spent.append(time.monotonic() - start)
