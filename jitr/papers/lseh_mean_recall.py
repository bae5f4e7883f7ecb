"""LSEH's Table 8 (Gong and Cosma): per dataset and loss, the mean of the five networks'
Recall@1, 5 and 10 of Tables 4-7 (fifteen values a direction) and its ``± std`` (their
population standard deviation), as jitr-tables tables: ``lseh.table8.f30k``, ``.coco1k``,
``.coco5k``, ``.iaprtc12``, one row per loss whose runs are the five networks' runs of that
loss in Tables 4-7. A row is scored by pooling its runs' test recalls (the ``pooled_full``
/ ``pooled_folds`` protocols, :mod:`!jitr.papers.pooled_scores`), not by an ensemble.
"""

from __future__ import annotations

from jitr.papers.lseh import (
  LOSSES,
  NETWORKS,
  PAPER,
  RESULTS,
  SOURCE,
  TABLE8,
  TABLE8_OFF,
  lseh_run,
)
from jitr.papers.published import Row, Table

# per direction: the mean of the fifteen Recall@K and their population std
METRICS = tuple(f"{d}/{m}" for d in ("i2t", "t2i") for m in ("networks_mean", "networks_std"))
POOLED = {"full": "pooled_full", "folds": "pooled_folds"}


def _table(results: Table) -> Table:
  """Table 8 on ``results``' dataset (one of Tables 4-7)."""
  key = results.name.rsplit(".", 1)[1]
  data = results.runs()[0].dataset
  rows = tuple(
    Row(
      loss,
      dict(zip(METRICS, TABLE8[key][loss], strict=True)),
      tuple(lseh_run(model, loss, data) for model in NETWORKS.values()),
      TABLE8_OFF.get((key, loss), ""),
    )
    for loss in LOSSES
  )
  return Table(
    f"lseh.table8.{key}",
    PAPER,
    "Table 8",
    f"The mean (± std) of the five networks' Recall@1, 5 and 10 per loss; {results.caption}",
    POOLED[results.protocol],
    METRICS,
    rows,
    SOURCE,
  )


TABLES = tuple(_table(results) for results in RESULTS)
"""Table 8 on each of Tables 4-7's datasets."""
