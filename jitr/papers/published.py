"""A published results table as data: its rows' printed numbers and the jitr runs that
train each row.

A :class:`Table` is one part of a paper's printed table (one dataset and evaluation
protocol), e.g. Listwise ITR's Table 1 on Flickr30K. Each :class:`Row` holds the numbers
as the paper prints them and the :class:`Run` (or runs, for an ensemble such as SGRAF =
the mean of SGR's and SAF's similarity matrices) that jitr trains for it: a spec of
``configs/paper.py`` (``DATA,MODEL,LOSS``) and the config fields it changes. A row whose
network or setting jitr does not train (a method the paper only quotes) has no runs: its
published numbers are listed, jitr's column is empty.

Metric names are jitr's report keys without their protocol prefix: ``i2t/R@1`` ...
``t2i/R@10``, ``rsum`` (Recall@K in percent, as the official evaluation prints), and for
class-labelled data ``i2t/mAP``, ``t2i/mAP``, ``mAP``. The report key of a metric is
``PREFIX/NAME``, PREFIX from the table's protocol (``PROTOCOL_PREFIX``). ``mR``, the
mean of the six Recall@K, is derived: ``rsum / 6``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

RECALL_METRICS = ("i2t/R@1", "i2t/R@5", "i2t/R@10", "t2i/R@1", "t2i/R@5", "t2i/R@10")
RSUM_METRICS = (*RECALL_METRICS, "rsum")
MR_METRICS = (*RECALL_METRICS, "mR")
# metric -> (the report metric it is derived from, the factor)
DERIVED = {"mR": ("rsum", 1 / 6)}
MAP_METRICS = ("i2t/mAP", "t2i/mAP", "mAP")

# protocol -> the prefix of its metrics in jitr-eval's metrics.json:
#   full:  the whole test split (Flickr30K's 1,000 images, COCO 5K, IAPR TC-12), official R@K
#   folds: COCO 1K, the mean of the five 1,000-image folds, official R@K
#   class: MAP over class labels (CMAL²R's Wikipedia and Pascal), jitr's protocol
PROTOCOL_PREFIX = {"full": "full", "folds": "folds", "class": "class"}
# protocol -> jitr-eval's --protocol
EVAL_PROTOCOL = {"full": "official", "folds": "official", "class": "jitr"}


@dataclasses.dataclass(frozen=True)
class Run:
  """One jitr-train run: ``--config=configs/paper.py:SPEC`` with ``overrides``
  (``(config field, value as on the command line)`` pairs), in the workdir folder
  ``name`` (one name per spec and overrides, shared by every table that needs the run)."""

  name: str
  spec: str
  overrides: tuple[tuple[str, str], ...] = ()

  @property
  def dataset(self) -> str:
    """The DATA part of the spec (``f30k``, ``coco``, ``iaprtc12``, ``wiki``, ``pascal``)."""
    return self.spec.split(",")[0]


@dataclasses.dataclass(frozen=True)
class Row:
  """A printed row: its ``label`` as printed, its ``values`` (``{metric: number as
  printed}``), the runs jitr trains for it (empty: not run by jitr; several: an ensemble
  scored on the mean of their similarity matrices) and ``notes`` (what the paper says
  of the row: quoted from another paper, an ensemble, ...)."""

  label: str
  values: Mapping[str, float]
  runs: tuple[Run, ...] = ()
  notes: str = ""


@dataclasses.dataclass(frozen=True)
class Table:
  """One dataset's part of a paper's printed table.

  ``name`` is the command's name for it (``PAPER.TABLE.DATASET``), ``paper`` and
  ``table`` say where it is printed (``Table 1``), ``caption`` is its caption,
  ``protocol`` how its numbers are measured (``PROTOCOL_PREFIX``), ``metrics`` its
  columns in printed order, ``scale`` what jitr's report values are multiplied by to be
  in the printed unit (1 for R@K in percent; 100 where a paper prints MAP in percent),
  ``source`` where the numbers were read.
  """

  name: str
  paper: str
  table: str
  caption: str
  protocol: str
  metrics: tuple[str, ...]
  rows: tuple[Row, ...]
  source: str
  scale: float = 1.0

  def report_key(self, metric: str) -> str:
    """The key in jitr-eval's metrics.json that ``metric`` is read from (a derived
    metric's source, ``DERIVED``) under this table's protocol."""
    source = DERIVED.get(metric, (metric, 1.0))[0]
    return f"{PROTOCOL_PREFIX[self.protocol]}/{source}"

  def value(self, scores: Mapping[str, float], metric: str) -> float:
    """``metric`` of jitr's report ``scores`` in the printed unit (times ``scale``;
    a derived metric times its factor)."""
    factor = DERIVED.get(metric, (metric, 1.0))[1]
    return self.scale * factor * scores[self.report_key(metric)]

  def runs(self) -> tuple[Run, ...]:
    """Every run the table's rows need, each once, in row order."""
    return tuple(dict.fromkeys(run for row in self.rows for run in row.runs))
