"""A row of a ``pooled_*`` table scored by pooling its runs' own test recalls (LSEH's
Table 8: the mean and population std of the five networks' Recall@1, 5, 10), each run
scored as a table of the underlying protocol scores it (``full``: the whole test split,
``folds``: COCO's 1K folds; the same jitr-eval reports Tables 4-7 read)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from jitr.papers.published import PROTOCOLS, RECALL_METRICS, Table, mean, population_std

# a pooled table's protocol -> the protocol each of its runs is scored with
UNDERLYING = {"pooled_full": "full", "pooled_folds": "folds"}


def pooled_scores(
  table: Table,
  workdirs: Sequence[str],
  score: Callable[[Table, Sequence[str]], dict[str, float]],
) -> dict[str, float]:
  """``{"pooled/{d}/networks_mean": m, "pooled/{d}/networks_std": s}``: over the Recall@1,
  5 and 10 of direction ``d`` of every run in ``workdirs`` (``score(table, [workdir])``
  of each, under :data:`UNDERLYING`), their mean and population std."""
  base = dataclasses.replace(table, protocol=UNDERLYING[table.protocol], metrics=RECALL_METRICS)
  prefix = PROTOCOLS[base.protocol].prefix
  per_run = [score(base, [w]) for w in workdirs]
  out = {}
  for d in ("i2t", "t2i"):
    values = [s[f"{prefix}/{d}/R@{k}"] for s in per_run for k in (1, 5, 10)]
    out[f"pooled/{d}/networks_mean"] = mean(*values)
    out[f"pooled/{d}/networks_std"] = population_std(*values)
  return out
