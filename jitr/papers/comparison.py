"""A published table beside jitr's: for every row and metric, the printed number, jitr's
mean ± sample standard deviation over the scored seeds and their difference.

For a metric with scores ``x_1 .. x_n`` (jitr's report values in the printed unit,
:meth:`~jitr.papers.published.Table.value`): mean ``m = Σ x_s / n``, std
``sqrt(Σ (x_s − m)² / (n − 1))`` (0 for one seed), difference ``m − published``. A
row without runs, or whose seeds are not scored yet, has ``n = 0`` and no mean. A row
may also be given the scores of an imported official checkpoint (``jitr-import``, then
jitr-eval with the same protocol): its value ``v`` and ``v − published`` per metric.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from jitr.papers.published import Table


def mean_std(values: Sequence[float]) -> tuple[float, float]:
  """``(mean, sample std)`` of ``values`` (std 0 for one value)."""
  mean = sum(values) / len(values)
  if len(values) < 2:
    return mean, 0.0
  return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def compare(
  table: Table,
  scores: Sequence[Sequence[Mapping[str, float]]],
  imported: Mapping[int, Mapping[str, float]] | None = None,
) -> dict[str, Any]:
  """The comparison of ``table`` with ``scores[i]``, the report metrics of row ``i``'s
  scored seeds (in seed order), and ``imported[i]``, those of an imported official
  checkpoint for row ``i`` (0-based): JSON-ready, rounded to 4 decimals (the printed
  numbers have at most 4)."""
  imported = imported or {}
  rows = []
  for index, (row, seeds) in enumerate(zip(table.rows, scores, strict=True)):
    metrics = {}
    for metric in table.metrics:
      published = row.values.get(metric)
      values = [table.value(s, metric) for s in seeds]
      entry: dict[str, Any] = {"published": published, "seeds": [round(v, 4) for v in values]}
      if values:
        mean, std = mean_std(values)
        entry.update(mean=round(mean, 4), std=round(std, 4))
        if published is not None:
          entry["difference"] = round(mean - published, 4)
      if index in imported:
        value = table.value(imported[index], metric)
        entry["official_checkpoint"] = round(value, 4)
        if published is not None:
          entry["official_difference"] = round(value - published, 4)
      metrics[metric] = entry
    rows.append(
      {
        "label": row.label,
        "runs": [run.name for run in row.runs],
        "notes": row.notes,
        "scored_seeds": len(seeds),
        "official_checkpoint": index in imported,
        "metrics": metrics,
      }
    )
  return {
    "table": table.name,
    "paper": table.paper,
    "printed_as": table.table,
    "caption": table.caption,
    "protocol": table.protocol,
    "source": table.source,
    "metrics": list(table.metrics),
    "decimals": table.decimals,
    "rows": rows,
  }
