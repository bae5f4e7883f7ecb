"""The full metric set from a similarity matrix and ground truth.

:func:`evaluate_retrieval` is the single entry point used by training's
validation and by the ``jitr-eval`` app. For each direction (image-to-text:
image queries over captions; text-to-image: caption queries over images) it
makes one sweep over the score blocks, computing every requested metric from
the same block, and returns a flat ``{name: float}`` dict:

================================  ==========================================
key                               metric
================================  ==========================================
``full/{d}/R@K``                  Recall@K, whole gallery (COCO 5K protocol)
``full/{d}/medr``, ``meanr``      median / mean rank of the best positive
``full/rsum``, ``full/mR``        RSUM and M-Recall over ``recall_ks``
``folds/...``                     the same averaged over folds (COCO 1K)
``{name}/{d}/mAP@R``, ``R-P``     extended positive set ``name`` (ECCV ...)
``{name}/{d}/R@K``                Recall@K with extended positives
``ndcg/{d}/NDCG@K``               NDCG@K with graded relevance
``semantic/{d}/NCS@K``, ``SR@K``  NCS and Semantic Recall (SAM paper), positives removed
``semantic_gt/{d}/NCS@K``         NCS with the annotated positives kept (SAM's Nsum)
``folds_semantic/...``            both NCS averaged over folds (``..._gt`` kept)
``class/{d}/mAP``, ``class/mAP``  MAP over class labels (CMAL^2R)
``nonfinite_scores``              number of NaN / +-inf entries of ``sim``
================================  ==========================================

``{d}`` is ``i2t`` or ``t2i``. Rates are in percent (``EvalOptions(percent=True)``,
the default) -- R@K 0..100, RSUM 0..600 -- ranks are 1-based.

The data (scores, ground truth, graded inputs, labels) are arguments; every choice of
what to compute is one frozen :class:`~jitr.evaluation.options.EvalOptions`, validated
when it is built. The call is four small steps:
:func:`~jitr.evaluation.plan.plan_evaluation` checks the data against the options;
:func:`sweep_direction` reads each direction's score blocks once (plus a top-``max R``
pass for mAP@R) into a typed :class:`~jitr.evaluation.engine.SweepResult`;
:func:`direction_metrics` names that direction's keys; :func:`summary_metrics` adds
RSUM, M-Recall and the class mAP over both directions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from jitr.evaluation import recall as recall_lib
from jitr.evaluation.class_map import ClassLabels, mean_class_ap
from jitr.evaluation.cross_modal import DIRECTIONS, CrossModalScores
from jitr.evaluation.eccv import map_rows, summarize_extended
from jitr.evaluation.engine import SweepData, SweepResult, sweep
from jitr.evaluation.folds import fold_average
from jitr.evaluation.ndcg import summarize_ndcg
from jitr.evaluation.options import DEFAULT_OPTIONS, EvalOptions
from jitr.evaluation.plan import EvaluationPlan, map_config, plan_evaluation, sweep_config
from jitr.evaluation.positives import PositiveSets
from jitr.evaluation.semantic import ncs_at, summarize_semantic

__all__ = [
  "CrossModalScores",
  "DIRECTIONS",
  "DirectionMetrics",
  "direction_metrics",
  "evaluate_retrieval",
  "summary_metrics",
  "sweep_direction",
]

Recalls = dict[int, float]


class DirectionMetrics(NamedTuple):
  """One direction's named metrics and its recall fractions (for RSUM / M-Recall).

  ``recalls`` maps a protocol (``"full"``, ``"folds"``) to ``{K: R@K}``.
  """

  values: dict[str, float]
  recalls: dict[str, Recalls]


def evaluate_retrieval(
  sim: Any,
  *,
  caption_to_image: Any,
  fold_ids: Any = None,
  extended_positives: Mapping[str, tuple[PositiveSets, PositiveSets]] | None = None,
  relevance: Any = None,
  semantic: Any = None,
  labels: ClassLabels | None = None,
  options: EvalOptions = DEFAULT_OPTIONS,
) -> dict[str, float]:
  """Computes the full metric set; see the module docstring for the keys.

  Args:
    sim: ``(num_images, num_captions)`` similarities (numpy / memmap / jax
      array) or a :class:`CrossModalScores` (e.g. ``from_embeddings`` for
      galleries too large to hold the matrix).
    caption_to_image: ``(num_captions,)`` index of each caption's image.
    fold_ids: ``(num_images,)`` fold id of each image; adds the ``folds/``
      protocol on that layout (equal contiguous folds: ``options.folds``).
    extended_positives: ``{name: (i2t, t2i)}`` extended positive sets (ECCV
      Caption, CxC, ...): ``i2t`` over captions for each image, ``t2i`` over
      images for each caption (see :mod:`!jitr.evaluation.positives`).
    relevance: graded relevance ``(num_images, num_captions)`` (array or
      :class:`CrossModalScores`), for NDCG@K; every entry finite (a NaN or +-inf
      is refused with a ``ValueError`` that counts them).
    semantic: semantic scores (same forms) for NCS / Semantic Recall; defaults
      to ``relevance`` when ``options.semantic_ks`` is non-empty and only
      ``relevance`` is given.
    labels: the images' (and captions') class ids ``(n,)`` or memberships ``(n, C)``
      for class MAP (:class:`~jitr.evaluation.class_map.ClassLabels`); captions default
      to their image's labels.
    options: what to compute and how (:class:`~jitr.evaluation.options.EvalOptions`:
      cut-offs, folds, mAP@R sets, directions, percent, block size).

  Returns:
    A flat ``{key: float}`` dict. ``nonfinite_scores`` counts the NaN / +-inf
    entries of ``sim`` (0.0 when all are finite): a NaN score never helps a
    metric -- a best positive scored NaN is not retrieved (rank = gallery
    size), a NaN item in a top-k is neither a hit nor a gain, class AP ranks
    NaN items last -- so check this key before trusting the numbers.

  Raises:
    ValueError: an input that does not fit (one line naming it): a ``sim`` without
      images or captions, sizes that differ, non-finite ``relevance`` ...
  """
  plan = plan_evaluation(
    sim,
    caption_to_image=caption_to_image,
    fold_ids=fold_ids,
    extended_positives=extended_positives,
    relevance=relevance,
    semantic=semantic,
    labels=labels,
    options=options,
  )
  scale = 100.0 if options.percent else 1.0
  results = {d: sweep_direction(plan, d, chunk_size=options.chunk_size) for d in plan.directions}
  per_direction = {d: direction_metrics(plan, d, r, scale) for d, r in results.items()}
  out: dict[str, float] = {}
  if results:
    first = next(iter(results.values()))
    out["nonfinite_scores"] = float(np.sum(first.nonfinite, dtype=np.int64))
  for metrics in per_direction.values():
    out.update(metrics.values)
  if plan.both_directions:
    out.update(summary_metrics(plan, per_direction, scale))
  return out


def sweep_direction(
  plan: EvaluationPlan, direction: str, *, chunk_size: int | None = None
) -> SweepResult:
  """Everything ``direction`` needs from its scores: one sweep, plus the mAP@R pass if asked."""
  src = plan.scores.direction(direction)
  extended = [sets[direction] for sets in plan.extended.values()]
  folds = plan.folds[direction] if plan.folds else None
  labels = plan.labels[direction] if plan.labels else (None, None)
  result = sweep(
    src,
    plan.positives[direction],
    cfg=sweep_config(plan, direction),
    data=SweepData(
      folds=folds,
      extended=extended,
      relevance=plan.relevance.direction(direction) if plan.relevance else None,
      semantic=plan.semantic.direction(direction) if plan.semantic else None,
      query_labels=labels[0],
      gallery_labels=labels[1],
    ),
    chunk_size=chunk_size,
  )
  cfg = map_config(plan, direction)
  if cfg is None:
    return result
  hits = sweep(
    src,
    plan.positives[direction],
    cfg=cfg,
    data=SweepData(extended=extended),
    query_rows=map_rows([extended[i] for i in cfg.map_sets]),
    chunk_size=chunk_size,
  ).extended_hits
  return dataclasses.replace(result, extended_hits=hits)


def direction_metrics(
  plan: EvaluationPlan, direction: str, result: SweepResult, scale: float
) -> DirectionMetrics:
  """``{key: value}`` of one direction, in the order of the module docstring's table."""
  d = direction
  recalls = {"full": recall_lib.recall_at_k(result.rank, plan.all_recall_ks)}
  values = _rank_keys(f"full/{d}", recalls["full"], _full_ranks(result.rank), scale)
  if plan.folds:
    group_of_query = plan.folds[d].group_of_query
    recalls["folds"] = _fold_recalls(result.group_rank, group_of_query, plan.all_recall_ks)
    ranks = _fold_ranks(result.group_rank, group_of_query)
    values.update(_rank_keys(f"folds/{d}", recalls["folds"], ranks, scale))
  for i, (name, sets) in enumerate(plan.extended.items()):
    values.update(_extended_keys(f"{name}/{d}", result, i, sets[d], plan.all_recall_ks, scale))
  if plan.ndcg_ks:
    ndcg = summarize_ndcg(result.dcg, result.idcg, plan.ndcg_ks)
    values.update(_prefixed(f"ndcg/{d}", ndcg, scale))
  if plan.semantic_ks:
    values.update(_semantic_keys(d, result, plan, scale))
  if plan.labels:
    values[f"class/{d}/mAP"] = scale * mean_class_ap(result.class_ap, result.class_valid)
  return DirectionMetrics(values, recalls)


def summary_metrics(
  plan: EvaluationPlan, per_direction: Mapping[str, DirectionMetrics], scale: float
) -> dict[str, float]:
  """RSUM and M-Recall of each protocol and the class mAP over both directions."""
  i2t, t2i = per_direction["i2t"], per_direction["t2i"]
  out = {}
  for proto in i2t.recalls:
    rs = recall_lib.rsum(i2t.recalls[proto], t2i.recalls[proto], plan.recall_ks)
    out[f"{proto}/rsum"] = scale * rs
    out[f"{proto}/mR"] = scale * rs / (2 * len(plan.recall_ks))
  if plan.labels:
    out["class/mAP"] = 0.5 * (i2t.values["class/i2t/mAP"] + t2i.values["class/t2i/mAP"])
  return out


def _semantic_keys(d: str, result: SweepResult, plan: EvaluationPlan, scale: float) -> dict:
  """NCS@K and SR@K with the annotated positives removed (``semantic/``), NCS@K with them
  kept (``semantic_gt/``) and, with folds, both NCS@K as the mean over folds of each fold's
  ``Σ num / Σ den`` (``folds_semantic/``, ``folds_semantic_gt/``)."""
  ks = plan.semantic_ks
  values = _prefixed(
    f"semantic/{d}", summarize_semantic(result.ncs_num, result.ncs_den, result.sr_hit, ks), scale
  )
  values.update(
    _prefixed(f"semantic_gt/{d}", ncs_at(result.ncs_gt_num, result.ncs_gt_den, ks), scale)
  )
  group_of_query = plan.folds[d].group_of_query if plan.folds else None
  for kind, prefix in (("removed", "folds_semantic"), ("kept", "folds_semantic_gt")):
    if kind not in result.group_ncs:
      continue
    num, den = result.group_ncs[kind]
    rows = np.arange(len(num))
    values.update(
      {
        f"{prefix}/{d}/NCS@{k}": scale
        * fold_average(
          rows,
          group_of_query,
          lambda r, k=k, num=num, den=den: ncs_at(num[r], den[r], [k])[f"NCS@{k}"],
        )
        for k in ks
      }
    )
  return values


def _full_ranks(rank: np.ndarray) -> tuple[float, float]:
  return recall_lib.median_rank(rank), recall_lib.mean_rank(rank)


def _fold_ranks(group_rank: np.ndarray, group_of_query: np.ndarray) -> tuple[float, float]:
  return (
    fold_average(group_rank, group_of_query, recall_lib.median_rank),
    fold_average(group_rank, group_of_query, recall_lib.mean_rank),
  )


def _fold_recalls(group_rank: np.ndarray, group_of_query: np.ndarray, ks: Sequence[int]) -> Recalls:
  """``{K: mean over folds of the fold's R@K}`` (the COCO 1K protocol)."""
  return {
    k: fold_average(group_rank, group_of_query, lambda r, k=k: recall_lib.recall_at_k(r, [k])[k])
    for k in ks
  }


def _rank_keys(
  prefix: str, recalls: Recalls, ranks: tuple[float, float], scale: float
) -> dict[str, float]:
  """``{prefix}/R@K`` (scaled), ``{prefix}/medr`` and ``{prefix}/meanr`` (1-based ranks)."""
  out = {f"{prefix}/R@{k}": scale * v for k, v in recalls.items()}
  out[f"{prefix}/medr"], out[f"{prefix}/meanr"] = ranks
  return out


def _extended_keys(
  prefix: str,
  result: SweepResult,
  index: int,
  positives: PositiveSets,
  ks: Sequence[int],
  scale: float,
) -> dict[str, float]:
  """``{prefix}/R@K`` (and ``mAP@R``, ``R-P``) of extended set ``index``."""
  hits = result.extended_hits.get(index)
  values = summarize_extended(result.extended_rank[index], hits, positives.num_positives, ks)
  return _prefixed(prefix, values, scale)


def _prefixed(prefix: str, values: Mapping[str, float], scale: float) -> dict[str, float]:
  return {f"{prefix}/{key}": scale * v for key, v in values.items()}
