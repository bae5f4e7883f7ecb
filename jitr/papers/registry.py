"""Every published table jitr can put beside its own numbers, by name
(``SOURCE.TABLE.DATASET``, e.g. ``cvse.readme.f30k``).

A table is added as data: a module of :class:`~jitr.papers.published.Table` values (its
rows' printed numbers, each row's runs) whose ``TABLES`` this registry lists."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from jitr.papers import (
  cmal2r,
  listwise,
  lseh,
  lseh_efficiency,
  lseh_mean_recall,
  network_readmes,
  sam,
)
from jitr.papers.published import Table

#: Every table by its name, in the order ``jitr-tables --table=list`` prints them.
TABLES: dict[str, Table] = {
  table.name: table
  for module in (network_readmes, listwise, cmal2r, sam, lseh_efficiency, lseh, lseh_mean_recall)
  for table in module.TABLES
}


def table_named(name: str) -> Table:
  """The table called ``name``; an unknown name is a ``ValueError`` naming the tables."""
  if name not in TABLES:
    raise ValueError(f"--table={name}: no such table; expected list or one of {', '.join(TABLES)}")
  return TABLES[name]


def only_rows(table: Table, numbers: Sequence[int]) -> Table:
  """``table`` with only its rows ``numbers`` (1-based, in the given order)."""
  bad = [n for n in numbers if not 1 <= n <= len(table.rows)]
  if bad:
    raise ValueError(
      f"--rows: {', '.join(map(str, bad))}: {table.name} has rows 1 to {len(table.rows)}"
    )
  return dataclasses.replace(table, rows=tuple(table.rows[n - 1] for n in numbers))
