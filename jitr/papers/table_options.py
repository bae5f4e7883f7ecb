"""jitr-tables' options (:class:`Options`, no flags: a test or a notebook builds them; the
actions, :data:`ACTIONS`) and what they select: the table and its rows, the ``--set``
items of every run, the ``--imported`` workdirs, and the folders checked before anything
is written."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence

from jitr import paths
from jitr.papers import registry
from jitr.papers.plan import check_folder, check_sets
from jitr.papers.published import Table

NAME = "jitr-tables"
ACTIONS = ("plan", "run", "jobs", "slurm", "report")
# the actions that train runs or print their training commands: those need the data
TRAINING_ACTIONS = ("run", "jobs", "slurm")


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


def say(line: str) -> None:
  """Writes ``jitr-tables: LINE`` to stderr (what the command does)."""
  sys.stderr.write(f"{NAME}: {line}\n")


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


def check_folders(options: Options) -> None:
  """Refuses, before anything is written, a ``--runs`` or ``--out`` that is (or lies
  under) a file (:func:`jitr.papers.plan.check_folder`)."""
  check_folder(f"--runs={options.runs}", options.root, "of the runs' workdirs")
  flag = f"--out={options.out}" if options.out else f"--runs={options.runs}"
  check_folder(flag, options.out_folder, "of the table files")


def row_numbers(table: Table, options: Options) -> list[int]:
  """The numbers (as ``--table=list`` prints them) of the rows of ``table``, the table
  :func:`selected_table` gave for ``options``."""
  return [int(r) for r in options.rows] or list(range(1, len(table.rows) + 1))


def imported_items(table: Table, options: Options) -> list[tuple[str, int, str]]:
  """``(item, row number, workdir)`` of each ``options.imported`` item (``ROW=WORKDIR``,
  ROW numbered as ``--table=list`` prints it); a bad item is one line."""
  numbers = row_numbers(table, options)
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
  numbers = row_numbers(table, options)
  return {numbers.index(n): folder for _, n, folder in imported_items(table, options)}
