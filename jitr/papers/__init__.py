"""The seed papers' and networks' published tables as data, and what reproducing one
takes: the runs of its rows (:mod:`!jitr.papers.plan`), their scores with the table's
protocol (:mod:`!jitr.papers.row_scores`, which loads JAX: import it by name), the
comparison (:mod:`!jitr.papers.comparison`) and its files
(:mod:`!jitr.papers.table_files`). The ``jitr-tables`` command drives them through its
actions (:mod:`!jitr.papers.actions`: plan, run, jobs, slurm, report)."""

from jitr.papers.comparison import compare, mean_std
from jitr.papers.plan import SeededRun, Status, seeded_runs, status, train_argv, workdir
from jitr.papers.published import Row, Run, Table
from jitr.papers.registry import TABLES, only_rows, table_named
from jitr.papers.table_files import markdown, write_table_files

__all__ = [
  "TABLES",
  "Row",
  "Run",
  "SeededRun",
  "Status",
  "Table",
  "compare",
  "markdown",
  "mean_std",
  "only_rows",
  "seeded_runs",
  "status",
  "table_named",
  "train_argv",
  "workdir",
  "write_table_files",
]
