"""Checking the data of ``evaluate_retrieval`` and deciding what each sweep computes.

:func:`plan_evaluation` turns the user's data and :class:`~jitr.evaluation.options.EvalOptions`
(validated on their own when built) into an :class:`EvaluationPlan`: every input
validated (one clear error naming the argument), the COCO 1K fold layout, the extended
positive sets and the graded / semantic / class inputs of both directions.
:func:`sweep_config` then says what one direction's sweep computes. Nothing here
touches a score, except the check that the graded relevance is finite (one read of it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitr.evaluation.class_map import ClassLabels, as_multihot
from jitr.evaluation.cross_modal import DIRECTIONS, CrossModalScores, as_cross_modal
from jitr.evaluation.engine import SweepConfig
from jitr.evaluation.folds import FoldGroups, contiguous_folds, fold_groups
from jitr.evaluation.kernels import nonfinite_count
from jitr.evaluation.options import DEFAULT_OPTIONS, EvalOptions
from jitr.evaluation.positives import PositiveSets, positives_from_owner
from jitr.evaluation.semantic import check_semantic_k
from jitr.evaluation.sources import Scores, default_chunk_size, iter_chunks

__all__ = ["EvaluationPlan", "plan_evaluation", "sweep_config", "map_config"]

ExtendedPositives = Mapping[str, tuple[PositiveSets, PositiveSets]]


@dataclasses.dataclass(frozen=True)
class EvaluationPlan:
  """Validated inputs of one evaluation; per-direction fields are ``{"i2t": .., "t2i": ..}``.

  Attributes:
    scores: the similarities.
    positives: the annotated positives (from ``caption_to_image``).
    directions: the directions to evaluate.
    recall_ks: cut-offs of RSUM / M-Recall; ``all_recall_ks`` adds the curves'.
    folds: sub-galleries of the ``folds/`` protocol, or None.
    extended: ``{name: {direction: PositiveSets}}`` in the caller's order.
    map_names: extended sets that also get mAP@R and R-Precision.
    relevance, ndcg_ks: graded relevance and NDCG cut-offs (None / empty: no NDCG).
    semantic, semantic_ks, semantic_num_relevant: NCS / Semantic Recall inputs.
    labels: ``(query, gallery)`` multi-hot class labels, or None.
    class_map_k: truncation of class AP (None: full ranking).
  """

  scores: CrossModalScores
  positives: Mapping[str, PositiveSets]
  directions: tuple[str, ...]
  recall_ks: tuple[int, ...]
  all_recall_ks: tuple[int, ...]
  folds: Mapping[str, FoldGroups] | None = None
  extended: Mapping[str, Mapping[str, PositiveSets]] = dataclasses.field(default_factory=dict)
  map_names: tuple[str, ...] = ()
  relevance: CrossModalScores | None = None
  ndcg_ks: tuple[int, ...] = ()
  semantic: CrossModalScores | None = None
  semantic_ks: tuple[int, ...] = ()
  semantic_num_relevant: int = 1
  labels: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None
  class_map_k: int | None = None

  @property
  def both_directions(self) -> bool:
    return set(self.directions) == set(DIRECTIONS)


def plan_evaluation(
  sim: Any,
  *,
  caption_to_image: Any,
  fold_ids: Any = None,
  extended_positives: ExtendedPositives | None = None,
  relevance: Any = None,
  semantic: Any = None,
  labels: ClassLabels | None = None,
  options: EvalOptions = DEFAULT_OPTIONS,
) -> EvaluationPlan:
  """Checks ``evaluate_retrieval``'s data (same names, same meaning) against each other
  and against ``options``, already valid on their own."""
  scores = as_cross_modal(sim, "sim")
  shape = (scores.num_images, scores.num_captions)
  if 0 in shape:
    raise ValueError(
      f"`sim` is {shape[0]} x {shape[1]}, expected at least 1 image (row) and 1 caption (column)"
    )
  owner = _check_owner(caption_to_image, shape[1])
  positives = dict(zip(DIRECTIONS, positives_from_owner(owner, num_images=shape[0])))
  fold_plan = _fold_plan(fold_ids, options.folds, owner, shape[0])
  extended = _check_extended(extended_positives, shape)
  map_names = _map_names(options.extended_map, tuple(extended))
  rel = as_cross_modal(relevance, "relevance", shape) if relevance is not None else None
  if rel is not None:
    _check_finite("relevance", rel.i2t, options.chunk_size)
  ndcg_ks = options.ndcg_ks if rel is not None else ()
  sem, semantic_ks = _semantic_inputs(semantic, rel, options.semantic_ks, shape)
  labels = _class_labels(labels, owner, shape)
  for d in options.directions if semantic_ks else ():
    gallery = scores.direction(d).num_gallery
    check_semantic_k(max(semantic_ks), options.semantic_num_relevant, positives[d], gallery)
  return EvaluationPlan(
    scores=scores,
    positives=positives,
    directions=options.directions,
    recall_ks=options.recall_ks,
    all_recall_ks=options.all_recall_ks,
    folds=fold_plan,
    extended=extended,
    map_names=map_names,
    relevance=rel,
    ndcg_ks=ndcg_ks,
    semantic=sem,
    semantic_ks=semantic_ks,
    semantic_num_relevant=options.semantic_num_relevant,
    labels=labels,
    class_map_k=options.class_map_k,
  )


def sweep_config(plan: EvaluationPlan, direction: str) -> SweepConfig:
  """What the main sweep of ``direction`` computes (one pass over its score blocks)."""
  gallery = plan.scores.direction(direction).num_gallery
  ndcg_k = min(max(plan.ndcg_ks), gallery) if plan.ndcg_ks else 0
  return SweepConfig(
    with_groups=plan.folds is not None,
    num_extended=len(plan.extended),
    topk=ndcg_k,
    ndcg_k=ndcg_k,
    semantic_k=max(plan.semantic_ks) if plan.semantic_ks else 0,
    semantic_n=plan.semantic_num_relevant,
    class_map_k=plan.class_map_k,
  )


def map_config(plan: EvaluationPlan, direction: str) -> SweepConfig | None:
  """The top-``max R`` pass for mAP@R / R-Precision of the ``map_names`` sets (None: none)."""
  names = list(plan.extended)
  map_sets = tuple(names.index(n) for n in plan.map_names)
  if not map_sets:
    return None
  gallery = plan.scores.direction(direction).num_gallery
  max_r = max(int(plan.extended[n][direction].num_positives.max(initial=0)) for n in plan.map_names)
  return SweepConfig(map_sets=map_sets, topk=min(max(max_r, 1), gallery), with_gt=False)


def _nonfinite_entries(source: Scores, chunk_size: int | None = None) -> int:
  """The number of NaN / +-inf entries of ``source``, read one block of rows at a time."""
  size = chunk_size or default_chunk_size(source.num_gallery)
  total = 0
  for rows, n_valid in iter_chunks(np.arange(source.num_queries), size):
    total += int(np.sum(np.asarray(nonfinite_count(source.block(rows)))[:n_valid]))
  return total


def _check_finite(name: str, source: Scores, chunk_size: int | None) -> None:
  """``ValueError`` naming ``name`` and how many of its entries are NaN / +-inf, if any: a
  non-finite graded value would silently drop its query from NDCG."""
  bad = _nonfinite_entries(source, chunk_size)
  if bad:
    raise ValueError(
      f"`{name}` has {bad} non-finite entries (NaN or +-inf) of {source.num_queries} x "
      f"{source.num_gallery}, expected finite graded relevance"
    )


def _check_owner(caption_to_image: Any, num_captions: int) -> np.ndarray:
  owner = np.asarray(caption_to_image)
  if owner.shape != (num_captions,):
    raise ValueError(
      f"`caption_to_image` must have shape ({num_captions},) (one image "
      f"index per caption of `sim`), got {owner.shape}"
    )
  return owner


def _fold_plan(
  fold_ids: Any, num_folds: int | None, owner: np.ndarray, num_images: int
) -> dict[str, FoldGroups] | None:
  """The sub-galleries of ``fold_ids`` or of ``num_folds`` contiguous folds (None: neither)."""
  if fold_ids is not None and num_folds is not None:
    raise ValueError("give `fold_ids` or `options.folds`, not both")
  if num_folds is not None:
    if num_images % num_folds:
      raise ValueError(f"`folds` must divide the number of images {num_images}, got {num_folds}")
    fold_ids = contiguous_folds(num_images, num_folds)
  if fold_ids is None:
    return None
  fold_ids = np.asarray(fold_ids)
  if fold_ids.shape != (num_images,):
    raise ValueError(
      f"`fold_ids` must have shape ({num_images},) (one fold id per image), got {fold_ids.shape}"
    )
  return fold_groups(fold_ids, owner)


def _check_extended(
  extended_positives: ExtendedPositives | None, shape: tuple[int, int]
) -> dict[str, dict[str, PositiveSets]]:
  out = {}
  for name, pair in (extended_positives or {}).items():
    if len(pair) != 2:
      raise ValueError(f"`extended_positives[{name!r}]` must be an (i2t, t2i) pair")
    for d, ps in zip(DIRECTIONS, pair):
      want = shape if d == "i2t" else shape[::-1]
      if not isinstance(ps, PositiveSets) or (ps.num_queries, ps.num_gallery) != want:
        raise ValueError(
          f"`extended_positives[{name!r}]` {d} must be PositiveSets over "
          f"{want[0]} queries x {want[1]} gallery items"
        )
    out[name] = dict(zip(DIRECTIONS, pair))
  return out


def _map_names(extended_map: bool | tuple[str, ...], names: tuple[str, ...]) -> tuple[str, ...]:
  if isinstance(extended_map, bool):
    return names if extended_map else ()
  for name in extended_map:
    if name not in names:
      raise ValueError(
        f"`extended_map` names {name!r}, which is not a key of `extended_positives` {list(names)}"
      )
  return tuple(extended_map)


def _semantic_inputs(
  semantic: Any,
  rel: CrossModalScores | None,
  semantic_ks: tuple[int, ...],
  shape: tuple[int, int],
) -> tuple[CrossModalScores | None, tuple[int, ...]]:
  """The semantic scores (``rel``, the relevance, when not given) and their cut-offs, or
  ``(None, ())``."""
  if (semantic is None and rel is None) or not semantic_ks:
    return None, ()
  sem = rel if semantic is None else as_cross_modal(semantic, "semantic", shape)
  return sem, semantic_ks


def _class_labels(
  labels: ClassLabels | None, owner: np.ndarray, shape: tuple[int, int]
) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
  """Multi-hot ``(query, gallery)`` labels per direction; captions default to their image's."""
  if labels is None:
    return None
  if labels.images is None:
    raise ValueError("`labels.images` is required (captions default to their image's labels)")
  n_img, n_cap = shape
  il = np.asarray(labels.images)
  if il.ndim not in (1, 2) or il.shape[0] != n_img:
    raise ValueError(
      f"`labels.images` must have {n_img} rows (one per image), got shape {il.shape}"
    )
  cl = il[owner] if labels.captions is None else np.asarray(labels.captions)
  num_classes = None
  if il.ndim == 1 and cl.ndim == 1:
    num_classes = int(max(il.max(initial=0), cl.max(initial=0))) + 1
  il = as_multihot(il, num_classes=num_classes, name="labels.images")
  cl = as_multihot(cl, num_classes=il.shape[1], name="labels.captions")
  if il.shape[0] != n_img or cl.shape[0] != n_cap:
    raise ValueError(
      f"`labels.images` / `labels.captions` must have {n_img} / {n_cap} "
      f"rows, got {il.shape[0]} / {cl.shape[0]}"
    )
  return {"i2t": (il, cl), "t2i": (cl, il)}
