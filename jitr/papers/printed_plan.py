"""What jitr-tables prints about runs before training them: every table and its rows
(``--table=list``), a table's plan (each run's status and workdir) and the estimate of the
training time and checkpoint disk the runs not finished need."""

from __future__ import annotations

from collections.abc import Sequence

from jitr.experiment.run_estimate import estimate_run
from jitr.papers import registry
from jitr.papers.plan import SeededRun, Status, status, to_train
from jitr.papers.published import Table
from jitr.papers.run_configs import run_config
from jitr.papers.table_options import say
from jitr.training import reporting


def duration(seconds: float) -> str:
  """``1h05m`` or ``4m09s``."""
  minutes, s = divmod(int(round(seconds)), 60)
  h, m = divmod(minutes, 60)
  return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def size(n: float) -> str:
  """Bytes as ``1.25 GiB`` or ``3.4 MiB``."""
  return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def list_tables() -> None:
  """Prints every table: its name, paper and printed table, its numbered rows and their
  runs (or why a row is not run)."""
  for table in registry.TABLES.values():
    count = len(table.runs())
    print(f"{table.name}: {table.paper}, {table.table} ({count} run{'s' * (count != 1)} a seed)")
    for i, row in enumerate(table.rows, 1):
      runs = " + ".join(r.name for r in row.runs) or f"not run: {row.notes}"
      print(f"  {i:2d}. {row.label}: {runs}")


def plan(table: Table, runs: Sequence[SeededRun]) -> None:
  """Prints the runs, their status and workdirs, and the counts."""
  states = [status(r) for r in runs]
  counts = {s: states.count(s) for s in Status}
  print(f"{table.name}: {table.paper}, {table.table}: {len(runs)} runs")
  print(
    f"  {counts[Status.FINISHED]} finished, {counts[Status.STARTED]} started, "
    f"{counts[Status.MISSING]} missing"
  )
  for run, state in zip(runs, states):
    print(f"  {state.value:8s} {run.run.spec:24s} seed {run.seed}  {run.workdir}")


def estimate(runs: Sequence[SeededRun], sets: Sequence[str]) -> None:
  """Measures a train step of each run not finished (its seeds share it) on this machine
  and prints each run's training time and checkpoint disk per seed, then the totals
  (:func:`jitr.experiment.run_estimate.estimate_run`)."""
  todo = to_train(runs)
  if not todo:
    return
  reporting.quiet_library_info_logs()
  measured = {}
  for seeded in todo:
    if seeded.run not in measured:
      say(f"measuring a train step of {seeded.run.name}")
      measured[seeded.run] = estimate_run(run_config(seeded, sets))
  device = next(iter(measured.values())).device
  print(
    f"estimate on {device} (each run's measured train step with the triplet alone; "
    "relevance precompute and validations not included):"
  )
  for run, e in measured.items():
    print(
      f"  {run.name}: {e.step_s:.3f} s/step × {e.steps:,} steps = {duration(e.train_s)} "
      f"per seed; checkpoints {size(e.checkpoint_bytes)}"
    )
  total_s = sum(measured[r.run].train_s for r in todo)
  total_bytes = sum(measured[r.run].checkpoint_bytes for r in todo)
  print(f"  {len(todo)} runs to train: {duration(total_s)}; checkpoints {size(total_bytes)}")
