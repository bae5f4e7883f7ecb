"""The actions of jitr-tables (:mod:`jitr.apps.tables`) on its options, an
:class:`Options` (no flags here: a test or a notebook calls them in its own process).
:func:`reproduce` does one action: ``plan``, ``run``, ``jobs``, ``slurm`` or ``report``.
Tables and their rows go to stdout; what the command does, to stderr."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Sequence

from jitr import paths
from jitr.apps.table_run_configs import (
  applicable_sets,
  check_configs,
  check_runs_match,
  check_sets_apply,
  parsed_config,
  run_config,
)
from jitr.papers import registry
from jitr.papers.plan import (
  SeededRun,
  Status,
  check_folder,
  check_sets,
  seeded_runs,
  shell_line,
  status,
  train_argv,
  workdir,
)
from jitr.papers.published import Table

ACTIONS = ("plan", "run", "jobs", "slurm", "report")
# the actions that train runs or print their training commands: those need the data
TRAINING_ACTIONS = ("run", "jobs", "slurm")
NAME = "jitr-tables"


@dataclasses.dataclass(frozen=True)
class Options:
  """jitr-tables' flags: ``table`` (a name), ``runs`` (the runs' folder), ``out`` (the
  table files' folder; empty: ``RUNS/tables``), ``seeds``, ``rows`` (1-based; empty: all),
  ``precomp_root``, ``sets`` (``FIELD=VALUE``), ``estimate`` and ``imported``
  (``ROW=WORKDIR``: a workdir jitr-import made from an official checkpoint, scored beside
  row ROW)."""

  table: str
  runs: str = "runs/papers"
  out: str = ""
  seeds: int = 3
  rows: Sequence[str] = ()
  precomp_root: str = ""
  sets: Sequence[str] = ()
  estimate: bool = True
  imported: Sequence[str] = ()

  @property
  def root(self) -> str:
    """``runs`` as an absolute path (the printed commands run from any folder)."""
    return paths.absolute(self.runs)

  @property
  def out_folder(self) -> str:
    """Where the table files go: ``out``, else ``RUNS/tables``."""
    return paths.absolute(self.out) if self.out else os.path.join(self.root, "tables")


def selected_table(options: Options) -> Table:
  """The table ``options.table``, only its ``options.rows`` when given."""
  table = registry.table_named(options.table)
  if not options.rows:
    return table
  if not all(str(r).isdigit() and int(r) >= 1 for r in options.rows):
    raise ValueError(f"--rows={','.join(map(str, options.rows))}: expected row numbers from 1")
  return registry.only_rows(table, [int(r) for r in options.rows])


def run_sets(options: Options) -> list[str]:
  """The ``FIELD=VALUE`` items of every run: ``precomp_root`` (from its option), a
  ``data_dir`` shared by every run (``RUNS/data``: relevance records and compiled steps
  made once) unless given, then ``options.sets``."""
  sets = list(options.sets)
  check_sets(sets)
  if not any(s.startswith("data_dir=") for s in sets):
    sets.insert(0, f"data_dir={os.path.join(options.root, 'data')}")
  if options.precomp_root:
    sets.insert(0, f"precomp_root={paths.absolute(options.precomp_root)}")
  return sets


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


def to_train(runs: Sequence[SeededRun]) -> list[SeededRun]:
  """The runs not finished (missing or started)."""
  return [r for r in runs if status(r) != Status.FINISHED]


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
  from jitr.experiment.run_estimate import estimate_run
  from jitr.training import reporting

  todo = to_train(runs)
  if not todo:
    return
  reporting.quiet_library_info_logs()
  measured = {}
  for seeded in todo:
    if seeded.run not in measured:
      sys.stderr.write(f"{NAME}: measuring a train step of {seeded.run.name}\n")
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


def report_argv(table: Table, options: Options) -> list[str]:
  """The jitr-tables command that writes ``table`` from ``options``' runs."""
  argv = [NAME, f"--table={options.table}", f"--runs={options.root}"]
  if options.out:
    argv.append(f"--out={options.out_folder}")
  argv.append(f"--seeds={options.seeds}")
  if options.rows:
    argv.append(f"--rows={','.join(map(str, options.rows))}")
  if options.precomp_root:
    argv.append(f"--precomp_root={paths.absolute(options.precomp_root)}")
  argv += [f"--set={s}" for s in options.sets]
  argv += [f"--imported={i}" for i in options.imported]
  return [*argv, "--action=report"]


def jobs(table: Table, runs: Sequence[SeededRun], sets: Sequence[str], options: Options):
  """The shell lines: ``set -e`` (a script of them stops at the first failure), the
  jitr-train command of every run not finished, then the report command."""
  lines = [shell_line(train_argv(r, applicable_sets(r, sets))) for r in to_train(runs)]
  return ["set -e", *lines, shell_line(report_argv(table, options))]


def slurm_script(table: Table, runs: Sequence[SeededRun], sets: Sequence[str], options) -> str:
  """A SLURM array script: task ``i`` runs the ``i``-th run not finished (requeued when
  preempted: jitr-train exits 75 after saving, and the same command resumes)."""
  todo = to_train(runs)
  lines = [
    "#!/bin/bash",
    f"#SBATCH --job-name=jitr-{table.name}",
    f"#SBATCH --array=0-{max(len(todo) - 1, 0)}",
    "#SBATCH --requeue",
    "# add your cluster's --partition, --gres=gpu:1, --time and --mem lines here",
    "set -euo pipefail",
    'case "$SLURM_ARRAY_TASK_ID" in',
  ]
  for i, run in enumerate(todo):
    lines.append(f"  {i}) {shell_line(train_argv(run, applicable_sets(run, sets)))} ;;")
  lines += [
    "esac",
    "# when every task has finished:",
    f"# {shell_line(report_argv(table, options))}",
  ]
  return "\n".join(lines) + "\n"


def train_runs(runs: Sequence[SeededRun], sets: Sequence[str]) -> None:
  """Trains every run not finished, in order, in this process (every config checked
  first): says which run and the table's ETA from the runs trained so far; jitr-train's
  own lines follow. A run stopped by SIGTERM or Ctrl-C (saved) ends the command with
  jitr-train's exit status and line."""
  from jitr.apps.stopped_runs import stopped_exit
  from jitr.experiment import train_and_evaluate
  from jitr.training import reporting

  todo = to_train(runs)
  configs = [run_config(r, sets) for r in todo]
  reporting.quiet_library_info_logs()
  spent: list[float] = []
  for i, (run, config) in enumerate(zip(todo, configs), 1):
    eta = ""
    if spent:
      eta = f"; the table's ETA {duration(sum(spent) / len(spent) * (len(todo) - i + 1))}"
    sys.stderr.write(f"{NAME}: run {i}/{len(todo)}: {run.run.name} seed {run.seed}{eta}\n")
    start = time.monotonic()
    with contextlib.redirect_stdout(sys.stderr):  # stdout: the table alone
      result = train_and_evaluate(config, run.workdir)
    if not result.finished:
      code, line = stopped_exit(result.stop_signal, result.step)
      sys.stderr.write(f"{NAME}: {run.run.name} seed {run.seed} {line}\n")
      raise SystemExit(code)
    spent.append(time.monotonic() - start)


def row_scores(table: Table, options: Options) -> list[list[dict]]:
  """For each row, the report metrics of its seeds whose runs all finished."""
  from jitr.papers.row_scores import score_row

  scores = []
  for row in table.rows:
    seeded = []
    for seed in range(options.seeds):
      members = [workdir(options.root, r, seed) for r in row.runs]
      finished = [status(SeededRun(r, seed, w)) for r, w in zip(row.runs, members)]
      if members and all(s == Status.FINISHED for s in finished):
        with contextlib.redirect_stdout(sys.stderr):
          seeded.append(score_row(table, members, say=say))
    scores.append(seeded)
  return scores


def imported_items(table: Table, options: Options) -> list[tuple[str, int, str]]:
  """``(item, row number, workdir)`` of each ``options.imported`` item (``ROW=WORKDIR``,
  ROW numbered as ``--table=list`` prints it); a bad item is one line."""
  numbers = [int(r) for r in options.rows] or list(range(1, len(table.rows) + 1))
  out = []
  for item in options.imported:
    row, equals, folder = item.partition("=")
    if not (equals and row.isdigit() and folder):
      raise ValueError(f"--imported={item}: expected ROW=WORKDIR (e.g. 2=workdirs/official)")
    if int(row) not in numbers:
      raise ValueError(f"--imported={item}: the table has no row {row} (rows {numbers})")
    if not paths.isfile(os.path.join(folder, "import.json")):
      raise ValueError(
        f"--imported={item}: {folder} holds no import.json; expected a workdir that "
        "jitr-import made from an official checkpoint"
      )
    out.append((item, int(row), paths.absolute(folder)))
  return out


def imported_rows(table: Table, options: Options) -> dict[int, str]:
  """``{row index in table: workdir}`` of ``options.imported`` (:func:`imported_items`)."""
  numbers = [int(r) for r in options.rows] or list(range(1, len(table.rows) + 1))
  return {numbers.index(n): folder for _, n, folder in imported_items(table, options)}


def check_imported(table: Table, options: Options, sets: Sequence[str]) -> None:
  """Refuses an ``options.imported`` workdir that is not what its row's runs are: another
  network, dataset or test split, or other test files than the table's runs read
  (:func:`jitr.papers.imported.check_imported`), in one line."""
  from jitr.papers import imported

  numbers = [int(r) for r in options.rows] or list(range(1, len(table.rows) + 1))
  for item, number, folder in imported_items(table, options):
    row = table.rows[numbers.index(number)]
    seeded = [SeededRun(r, 0, workdir(options.root, r, 0)) for r in row.runs]
    configs = [parsed_config(s, applicable_sets(s, sets)) for s in seeded]
    imported.check_imported(item, folder, number, row, configs)


def check_folders(options: Options) -> None:
  """Refuses, before anything is written, a ``--runs`` or ``--out`` that is (or lies
  under) a file (:func:`jitr.papers.plan.check_folder`)."""
  check_folder(f"--runs={options.runs}", options.root, "of the runs' workdirs")
  flag = f"--out={options.out}" if options.out else f"--runs={options.runs}"
  check_folder(flag, options.out_folder, "of the table files")


def say(line: str) -> None:
  """Writes ``jitr-tables: LINE`` to stderr (what the command does)."""
  sys.stderr.write(f"{NAME}: {line}\n")


def report(table: Table, options: Options) -> dict[str, str]:
  """Scores every row's finished seeds (and the imported official checkpoints), writes
  the table files, prints the Markdown; returns the files' paths."""
  from jitr.papers.comparison import compare
  from jitr.papers.row_scores import score_row
  from jitr.papers.table_files import markdown, write_table_files

  imported = {}
  for index, folder in imported_rows(table, options).items():
    with contextlib.redirect_stdout(sys.stderr):
      imported[index] = score_row(table, [folder], trained="import.json", say=say)
  comparison = compare(table, row_scores(table, options), imported)
  paths = write_table_files(comparison, options.out_folder)
  sys.stdout.write(markdown(comparison))
  sys.stderr.write(f"{NAME}: wrote {paths['md']}, {paths['json']}, {paths['png']}\n")
  return paths


def reproduce(action: str, options: Options) -> None:
  """Does ``action`` for ``options.table`` (``list``: prints the tables)."""
  if options.table == "list":
    list_tables()
    return
  table = selected_table(options)
  check_folders(options)
  imported_items(table, options)  # a bad --imported before anything runs
  sets = run_sets(options)
  runs = seeded_runs(table, options.root, options.seeds)
  check_sets_apply(runs, sets)
  check_configs(runs, sets, data=action in TRAINING_ACTIONS)  # as jitr-train checks them
  check_runs_match(runs, sets)  # a run trained with other settings, before anything runs
  check_imported(table, options, sets)  # an official checkpoint of another row or data
  if action == "plan":
    plan(table, runs)
    if options.estimate:
      estimate(runs, sets)
  elif action == "jobs":
    sys.stdout.write("\n".join(jobs(table, runs, sets, options)) + "\n")
  elif action == "slurm":
    sys.stdout.write(slurm_script(table, runs, sets, options))
  else:
    if action == "run":
      if options.estimate:
        estimate(runs, sets)
      train_runs(runs, sets)
    report(table, options)
