"""The training of a table's runs as text to hand to a shell or a scheduler: the jitr-train
command of every run not finished, then the jitr-tables command that writes the table
(``--action=jobs``), or a SLURM array script of the same runs (``--action=slurm``)."""

from __future__ import annotations

from collections.abc import Sequence

from jitr import paths
from jitr.papers.plan import SeededRun, shell_line, to_train, train_argv
from jitr.papers.published import Table
from jitr.papers.run_configs import applicable_sets
from jitr.papers.table_options import NAME, Options


def report_argv(options: Options) -> list[str]:
  """The jitr-tables command that writes the table of ``options`` from its runs."""
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


def train_line(run: SeededRun, sets: Sequence[str]) -> str:
  """The shell line of the jitr-train command of ``run`` with the items of ``sets`` it
  takes."""
  return shell_line(train_argv(run, applicable_sets(run, sets)))


def jobs(runs: Sequence[SeededRun], sets: Sequence[str], options: Options) -> list[str]:
  """The shell lines: ``set -e`` (a script of them stops at the first failure), the
  jitr-train command of every run not finished, then the report command."""
  lines = [train_line(r, sets) for r in to_train(runs)]
  return ["set -e", *lines, shell_line(report_argv(options))]


def slurm_script(
  table: Table, runs: Sequence[SeededRun], sets: Sequence[str], options: Options
) -> str:
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
  lines += [f"  {i}) {train_line(run, sets)} ;;" for i, run in enumerate(todo)]
  lines += [
    "esac",
    "# when every task has finished:",
    f"# {shell_line(report_argv(options))}",
  ]
  return "\n".join(lines) + "\n"
