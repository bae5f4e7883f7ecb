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
``PREFIX/NAME``, PREFIX from the table's protocol (``PROTOCOLS``). The metrics a
paper prints that the report does not hold are derived from those it does (``DERIVED``):
``mR``, the mean of the six Recall@K, ``rsum / 6``; LSEH's
``i2t/mean`` and ``i2t/std`` (and ``t2i/``), the mean ``m = (R@1 + R@5 + R@10) / 3`` of one
direction and the population standard deviation ``sqrt(Σ (R@K − m)² / 3)`` printed
beside it as ``(± std)``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping

RECALL_METRICS = ("i2t/R@1", "i2t/R@5", "i2t/R@10", "t2i/R@1", "t2i/R@5", "t2i/R@10")
RSUM_METRICS = (*RECALL_METRICS, "rsum")
MR_METRICS = (*RECALL_METRICS, "mR")
MAP_METRICS = ("i2t/mAP", "t2i/mAP", "mAP")
# SAM's NCS@K: with the annotated positives kept (its N@K and Nsum) and removed (its
# Nsum(N)), named as jitr-eval's whole-split keys; a table on COCO's folds reads them under
# ``folds_`` (:meth:`Table.report_keys`)
SEMANTIC_GT, SEMANTIC = "semantic_gt/", "semantic/"
NCS_METRICS = tuple(f"{SEMANTIC_GT}{d}/NCS@{k}" for d in ("i2t", "t2i") for k in (1, 5, 10))
NCS_REMOVED_METRICS = tuple(f"{SEMANTIC}{d}/NCS@{k}" for d in ("i2t", "t2i") for k in (1, 5, 10))


def mean(*values: float) -> float:
  """``Σ v / n``."""
  return sum(values) / len(values)


def population_std(*values: float) -> float:
  """``sqrt(Σ (v − m)² / n)``, ``m`` the :func:`mean`: the spread LSEH prints as
  ``(± std)`` beside a mean of Recall@1, 5 and 10."""
  m = mean(*values)
  return math.sqrt(sum((v - m) ** 2 for v in values) / len(values))


@dataclasses.dataclass(frozen=True)
class Derived:
  """A printed metric computed from report metrics: ``formula(*sources' values)``."""

  sources: tuple[str, ...]
  formula: Callable[..., float]


def _recalls(direction: str) -> tuple[str, ...]:
  return tuple(f"{direction}/R@{k}" for k in (1, 5, 10))


DERIVED: dict[str, Derived] = {
  "mR": Derived(("rsum",), lambda rsum: rsum / 6),
  "nsum": Derived(NCS_METRICS, lambda *ncs: sum(ncs)),
  "nsum_n": Derived(NCS_REMOVED_METRICS, lambda *ncs: sum(ncs)),
  **{f"{d}/mean": Derived(_recalls(d), mean) for d in ("i2t", "t2i")},
  **{f"{d}/std": Derived(_recalls(d), population_std) for d in ("i2t", "t2i")},
}
"""The printed metrics jitr's report does not hold, by name, and how each is computed."""

# LSEH's columns: Recall@1, 5, 10, their mean and its (± std), each direction
MEAN_STD_METRICS = tuple(
  metric for d in ("i2t", "t2i") for metric in (*_recalls(d), f"{d}/mean", f"{d}/std")
)


@dataclasses.dataclass(frozen=True)
class Protocol:
  """How a table's numbers are measured: ``prefix``, the one of its metrics' keys in
  jitr-eval's metrics.json; ``evaluation``, jitr-eval's ``--protocol``; ``words``, how the
  table's page says it."""

  prefix: str
  evaluation: str
  words: str


_COCO_FOLDS = "the mean of COCO's five 1,000-image test folds"
PROTOCOLS: dict[str, Protocol] = {
  # the whole test split (Flickr30K's 1,000 images, COCO 5K, IAPR TC-12)
  "full": Protocol("full", "official", "the whole test split, the official evaluation's R@K"),
  # COCO 1K
  "folds": Protocol("folds", "official", f"{_COCO_FOLDS}, the official evaluation's R@K"),
  # CMAL²R's Wikipedia and Pascal
  "class": Protocol("class", "jitr", "MAP over class labels, both directions"),
  # jitr's R@K and SAM's NCS@K against the table's ``semantic`` scores
  # (``semantic_gt/{i2t,t2i}/NCS@K``, ``semantic/...``), on the whole split or COCO's folds
  # (``folds/...``, ``folds_semantic_gt/...``, ``folds_semantic/...``)
  "semantic": Protocol("full", "jitr", "the whole test split, jitr's Recall@K and SAM's NCS@K"),
  "semantic_folds": Protocol("folds", "jitr", f"{_COCO_FOLDS}, jitr's Recall@K and SAM's NCS@K"),
  # numbers jitr does not compute (data it does not have): no row is run
  "reference": Protocol(
    "reference", "jitr", "printed for reference: jitr does not compute these numbers"
  ),
  # jitr-eval --eccv: eccv/{i2t,t2i}/mAP@R, R-P, R@K
  "eccv": Protocol(
    "eccv", "jitr", "COCO's 5K test split against ECCV Caption's positives (mAP@R, R-P, R@1)"
  ),
  # each run of a row scored alone (full / folds), their recalls pooled (LSEH's Table 8:
  # jitr.papers.pooled_scores)
  "pooled_full": Protocol(
    "pooled", "official", "each run on the whole test split (official R@K), the recalls pooled"
  ),
  "pooled_folds": Protocol(
    "pooled", "official", "each run on COCO's five 1K folds (official R@K), the recalls pooled"
  ),
  # the runs' validation histories, not a test evaluation (LSEH's Table 3:
  # jitr.papers.validation_scores)
  "validation": Protocol(
    "validation",
    "jitr",
    "the runs' validation histories (every validation's M-Recall and epoch)",
  ),
}
"""Every table protocol by name."""


def _report_key(prefix: str, source: str) -> str:
  """The report key of ``source`` under a protocol's ``prefix``: ``PREFIX/SOURCE``; an NCS
  key (``semantic[_gt]/...``) as it is on the whole split, ``folds_`` before it on folds."""
  if source.startswith((SEMANTIC, SEMANTIC_GT)):
    return source if prefix == "full" else f"{prefix}_{source}"
  return f"{prefix}/{source}"


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
  ``protocol`` how its numbers are measured (``PROTOCOLS``), ``metrics`` its
  columns in printed order, ``scale`` what jitr's report values are multiplied by to be
  in the printed unit (1 for R@K in percent; 100 where a paper prints MAP in percent),
  ``source`` where the numbers were read, ``decimals`` the digits the report shows after
  the point (the paper's: 2 for R@K in percent, 4 for CMAL²R's MAP in [0, 1]),
  ``semantic`` the scores (``topk:NAME``) a ``semantic`` table's NCS@K columns are computed
  against (jitr-eval's ``--semantic``).
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
  decimals: int = 2
  semantic: str = ""

  def report_keys(self, metric: str) -> tuple[str, ...]:
    """The keys in jitr-eval's metrics.json that ``metric`` is read from under this
    table's protocol: its own, or a derived metric's sources (``DERIVED``)."""
    sources = DERIVED[metric].sources if metric in DERIVED else (metric,)
    prefix = PROTOCOLS[self.protocol].prefix
    return tuple(_report_key(prefix, s) for s in sources)

  def value(self, scores: Mapping[str, float], metric: str) -> float:
    """``metric`` of jitr's report ``scores`` in the printed unit: each report value
    times ``scale``, a derived metric's formula applied to them."""
    values = [self.scale * scores[key] for key in self.report_keys(metric)]
    return DERIVED[metric].formula(*values) if metric in DERIVED else values[0]

  def runs(self) -> tuple[Run, ...]:
    """Every run the table's rows need, each once, in row order."""
    return tuple(dict.fromkeys(run for row in self.rows for run in row.runs))
