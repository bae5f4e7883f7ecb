"""The actions of jitr-tables on its :class:`~jitr.papers.table_options.Options`:
:func:`reproduce` checks the options and every run's config first (as jitr-train checks
them), then does one action: ``plan``, ``run``, ``jobs``, ``slurm`` or ``report``. Tables
and their rows go to stdout; what the command does, to stderr."""

from __future__ import annotations

import sys

from jitr.papers.job_scripts import jobs, slurm_script
from jitr.papers.plan import seeded_runs
from jitr.papers.printed_plan import estimate, list_tables, plan
from jitr.papers.run_configs import check_configs, check_runs_match, check_sets_apply
from jitr.papers.table_options import (
  TRAINING_ACTIONS,
  Options,
  check_folders,
  imported_items,
  run_sets,
  selected_table,
)
from jitr.papers.table_report import check_imported, report
from jitr.papers.train_runs import train_runs


def reproduce(action: str, options: Options) -> None:
  """Does ``action`` for ``options.table`` (``list``: prints the tables). A run that
  ``run`` trains and a signal stops raises :class:`jitr.papers.train_runs.RunStopped`."""
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
    sys.stdout.write("\n".join(jobs(runs, sets, options)) + "\n")
  elif action == "slurm":
    sys.stdout.write(slurm_script(table, runs, sets, options))
  else:
    if action == "run":
      if options.estimate:
        estimate(runs, sets)
      train_runs(runs, sets)
    report(table, options)
