"""jitr-tables: a paper's published table beside jitr's, one command per table.

  jitr-tables --table=list
  jitr-tables --table=cvse.readme.f30k --precomp_root=/data/precomp --runs=runs/papers
  jitr-tables --table=cvse.readme.f30k --precomp_root=/data/precomp --action=run
  jitr-tables --table=cvse.readme.f30k --precomp_root=/data/precomp --action=jobs > jobs.sh
  jitr-tables --table=cvse.readme.f30k --precomp_root=/data/precomp --action=slurm > t.sbatch
  jitr-tables --table=cvse.readme.f30k --precomp_root=/data/precomp --action=report

A table (``--table=list`` names them) is one dataset's part of a printed table, its rows the
paper's numbers and the jitr runs that train each (``configs/paper.py`` specs). Each run is
trained once per seed (``--seeds``) in ``RUNS/RUN_NAME/seedS``, shared by every table that
needs it. Actions:

* ``plan`` (the default): the runs the table needs and how far each got (finished,
  started, missing).
* ``run``: trains the missing and started runs one after the other in this process
  (a started one resumes from its latest checkpoint; a finished one is never trained
  again), then does ``report``. Stopped by SIGTERM or Ctrl-C it saves the run in progress
  and exits 75 or 130, as jitr-train: the same command goes on from there.
* ``jobs``: ``set -e``, the jitr-train command of every run not finished, one per line,
  then the ``report`` command: a shell script (``sh jobs.sh``), or lines to hand to a
  scheduler.
* ``slurm``: the same runs as a SLURM job array script (one run per array task).
* ``report``: scores every finished run's row with the paper's protocol (jitr-eval of its
  workdirs, reused while newer than the run) and writes ``OUT/TABLE.md``, ``.json`` and
  ``.png`` (published value, jitr's mean ± std over the scored seeds, the difference); the
  Markdown goes to stdout too.

``--imported=ROW=WORKDIR`` scores an official checkpoint imported with jitr-import beside
row ROW (its own line and difference); a workdir of another network, dataset or test
split, or imported on other test files than the table's runs read, is refused.
``--set=FIELD=VALUE`` (repeatable) sets a config field of every run that has it, after the
paper's settings (e.g. ``--set=text.pretrained=/models/bert-base-uncased`` for VSE∞'s
BERT); a field no run has, or a value jitr-train would refuse, is refused by every action.
Flag parsing, then :func:`!jitr.papers.actions.reproduce`.
"""

from __future__ import annotations

import sys

from absl import flags

from jitr.apps._cli import App, flag_inputs
from jitr.apps.stopped_runs import stopped_exit
from jitr.papers.table_options import ACTIONS, Options

APP = App("jitr-tables", __name__, requires=("table",), inputs=flag_inputs("precomp_root"))

_TABLE = flags.DEFINE_string(
  "table", None, "The table to reproduce; list: print every table, its rows and their runs."
)
_ACTION = flags.DEFINE_enum("action", "plan", ACTIONS, "What to do (see above).")
_RUNS = flags.DEFINE_string(
  "runs", "runs/papers", "Folder of the runs' workdirs (RUNS/RUN_NAME/seedS), shared by tables."
)
_OUT = flags.DEFINE_string("out", "", "Folder of the table files; empty: RUNS/tables.")
_SEEDS = flags.DEFINE_integer("seeds", 3, "Seeds per run (config.seed 0 .. N-1).", lower_bound=1)
_ROWS = flags.DEFINE_list(
  "rows", [], "Only these rows of the table (numbered as --table=list prints them); empty: all."
)
_PRECOMP_ROOT = flags.DEFINE_string(
  "precomp_root",
  "",
  "The folder holding f30k_precomp/, coco_precomp/ and iaprtc12_precomp/ "
  "(config.precomp_root of every run).",
)
_ESTIMATE = flags.DEFINE_bool(
  "estimate",
  True,
  "With plan and run: measure each run's train step here first and state the training "
  "time and checkpoint disk the runs not finished need.",
)
_IMPORTED = flags.DEFINE_multi_string(
  "imported",
  [],
  "ROW=WORKDIR: score a workdir jitr-import made from an official checkpoint beside row "
  "ROW (repeatable; with the report).",
)
_SET = flags.DEFINE_multi_string(
  "set", [], "FIELD=VALUE: a config field of every run (repeatable; after the paper's)."
)


def main() -> None:
  """Does ``--action`` for ``--table`` (``list``: prints the tables); a run stopped by a
  signal (saved) ends the command with jitr-train's exit status and line."""
  from jitr.papers.actions import reproduce  # JAX loads only when the app runs
  from jitr.papers.train_runs import RunStopped

  options = Options(
    table=_TABLE.value,
    runs=_RUNS.value,
    out=_OUT.value,
    seeds=_SEEDS.value,
    rows=tuple(_ROWS.value),
    precomp_root=_PRECOMP_ROOT.value,
    sets=tuple(_SET.value),
    estimate=_ESTIMATE.value,
    imported=tuple(_IMPORTED.value),
  )
  try:
    reproduce(_ACTION.value, options)
  except RunStopped as stopped:
    code, line = stopped_exit(stopped.stop_signal, stopped.step)
    sys.stderr.write(f"{APP.name}: {stopped.run} {line}\n")
    raise SystemExit(code) from None


def run() -> None:
  """Console-script entry point."""
  APP.run(main)


if __name__ == "__main__":
  run()
