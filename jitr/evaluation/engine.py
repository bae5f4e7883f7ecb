"""One sweep over a direction's score blocks computing every per-query quantity.

For each block of ``B`` queries the scores (and, when asked, the graded
relevance and semantic scores of the same rows) are read once and a few small
jitted kernels compute everything the metrics need from that block; only
small per-query arrays come back. Memory is bounded by a few ``(B, G)``
blocks.

Non-finite scores never improve a metric: each block is turned into
:func:`kernels.order_key` keys (NaN below ``-inf``); a best positive scored NaN
gets rank ``G`` (the gallery or sub-gallery size: not retrieved), and a NaN
item in a top-k is neither a hit (mAP@R, R-P) nor a gain (NDCG, NCS, SR). Class
AP ranks NaN items last, the relevant ones after the others. Every sweep also
counts the non-finite (NaN, +-inf) scores of each query row (``nonfinite``).

The metric modules (:mod:`recall`, :mod:`eccv`, :mod:`ndcg`, :mod:`semantic`,
:mod:`class_map`) turn these per-query arrays into means; :mod:`suite` runs one
sweep per direction for the full metric set.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jitr.evaluation import kernels
from jitr.evaluation.folds import FoldGroups
from jitr.evaluation.positives import PositiveSets
from jitr.evaluation.sources import Scores, default_chunk_size, iter_chunks
from jitr.losses import dcg

__all__ = ["SweepConfig", "SweepData", "SweepResult", "sweep", "class_average_precision_block"]


@dataclasses.dataclass(frozen=True)
class SweepConfig:
  """Static description of what one sweep computes.

  Attributes:
    with_groups: rank the best annotated positive also inside a sub-gallery.
    num_extended: number of extended positive sets whose best positive is
      ranked (count-based: Recall@K for any K).
    map_sets: indices (into ``extended``) of the sets whose top-``topk`` hit
      pattern is returned (for mAP@R / R-Precision).
    topk: size of the top-k of the scores (``>= max R`` of the ``map_sets``,
      ``>= ndcg_k``). 0 = no top-k.
    ndcg_k: largest K of NDCG@K (0 = no NDCG).
    semantic_k: largest K of NCS@K / Semantic Recall@K (0 = none).
    semantic_n: number of semantically relevant items of Semantic Recall.
    with_gt: rank the annotated positives (False for passes that only need
      the top-k, e.g. the mAP@R pass over a subset of queries).
    class_map_k: truncate class AP (computed when the sweep's data has class labels)
      to the top ``k`` (None: full ranking).
  """

  with_groups: bool = False
  num_extended: int = 0
  map_sets: tuple[int, ...] = ()
  topk: int = 0
  ndcg_k: int = 0
  semantic_k: int = 0
  semantic_n: int = 1
  with_gt: bool = True
  class_map_k: int | None = None


@dataclasses.dataclass(frozen=True)
class SweepData:
  """What a sweep reads besides the scores and the annotated positives, all of one
  direction (``Q`` queries over ``G`` items); what is left out is not read.

  Attributes:
    folds: sub-galleries (e.g. COCO 1K folds): ``groups`` ``(M, G)`` bool and
      ``group_of_query`` ``(Q,)``, the one each query is ranked in.
    extended: extended positive sets (Q x G each).
    relevance: graded relevance source (required when ``cfg.ndcg_k``).
    semantic: semantic-score source (required when ``cfg.semantic_k``).
    query_labels / gallery_labels: ``(Q, C)`` / ``(G, C)`` bool class memberships;
      when given, class-label average precision is computed.
  """

  folds: FoldGroups | None = None
  extended: Sequence[PositiveSets] = ()
  relevance: Scores | None = None
  semantic: Scores | None = None
  query_labels: np.ndarray | None = None
  gallery_labels: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class SweepResult:
  """Per-query arrays of one sweep (``Q`` rows each); ``None`` / empty when not computed.

  Attributes:
    rank: ``(Q,)`` 0-based rank of the best annotated positive, ``-1`` when
      the query has none.
    group_rank: ``(Q,)`` the same rank inside the query's sub-gallery.
    extended_rank: per extended set, ``(Q,)`` rank of its best positive
      (``-1``: none in the gallery).
    extended_hits: ``{set index: (Q, topk) bool}`` top-k hit pattern of the
      ``map_sets`` (for mAP@R / R-Precision); a set is absent when no query
      was swept.
    dcg, idcg: ``(Q, ndcg_k)`` DCG@K / IDCG@K curves for K = 1..ndcg_k.
    ncs_num, ncs_den: ``(Q, semantic_k)`` cumulative semantic scores of the
      retrieved / ideal items (NCS@K numerator, denominator), the annotated
      positives removed from both rankings.
    sr_hit: ``(Q, semantic_k)`` bool, a semantically relevant item within K.
    ncs_gt_num, ncs_gt_den: the same curves with the annotated positives kept in
      both rankings (SAM's Nsum; ``ncs_*`` is its ``Nsum(N)``).
    group_ncs: with ``with_groups``, ``{"removed" | "kept": (num, den)}``: both
      kinds of curves inside the query's sub-gallery (the COCO 1K folds).
    class_ap, class_valid: ``(Q,)`` class-label AP and whether the query has
      any relevant item.
    nonfinite: ``(Q,)`` number of NaN / +-inf scores in each swept query row.
  """

  rank: np.ndarray | None = None
  group_rank: np.ndarray | None = None
  extended_rank: tuple[np.ndarray, ...] = ()
  extended_hits: Mapping[int, np.ndarray] = dataclasses.field(default_factory=dict)
  dcg: np.ndarray | None = None
  idcg: np.ndarray | None = None
  ncs_num: np.ndarray | None = None
  ncs_den: np.ndarray | None = None
  sr_hit: np.ndarray | None = None
  ncs_gt_num: np.ndarray | None = None
  ncs_gt_den: np.ndarray | None = None
  group_ncs: Mapping[str, tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=dict)
  class_ap: np.ndarray | None = None
  class_valid: np.ndarray | None = None
  nonfinite: np.ndarray | None = None


# Small separate kernels: XLA:CPU fuses one counting reduction per kernel into
# a fast vectorised loop, but several reductions over the same block in one
# jitted function can be an order of magnitude slower.

_best = jax.jit(kernels.best_positive)


@jax.jit
def _keys_and_nonfinite(block):
  """Order keys of the block and its non-finite count per row, from one read."""
  return kernels.order_key(block), kernels.nonfinite_count(block)


_credited = jax.jit(kernels.credited)


@jax.jit
def _worst_if_nan(rank, t, worst):
  """``worst`` (the gallery size: not retrieved) where the best positive's score is NaN."""
  return jnp.where(t == kernels.NAN_KEY, worst, rank)


_rank = jax.jit(kernels.rank_of)


@jax.jit
def _rank_in(scores, t, p, col_ok):
  return kernels.rank_of(scores, t, p, col_ok)


@functools.partial(jax.jit, static_argnames=("segments",))
def _rank_segments(scores, t, p, *, segments: int):
  """Rank counts per equal contiguous column segment: ``(B, segments)``.

  Their sum is the rank in the whole gallery and entry ``m`` the rank inside
  segment ``m`` -- both sub-gallery protocols from one pass (the COCO layout,
  where each fold's items are contiguous).
  """
  col = jnp.arange(scores.shape[1], dtype=jnp.int32)
  before = (scores > t[:, None]) | ((scores == t[:, None]) & (col[None] < p[:, None]))
  return jnp.sum(before.reshape(scores.shape[0], segments, -1), axis=2, dtype=jnp.int32)


@functools.partial(jax.jit, static_argnames=("k",))
def _topk_idx(scores, *, k: int):
  return jax.lax.top_k(scores, k)[1]


_membership = jax.jit(kernels.membership)


@jax.jit
def _ndcg_finish(rel, top_idx, ok, ideal):
  got = jnp.take_along_axis(rel, top_idx, axis=1)
  return (
    kernels.discounted_cumsum(jnp.where(ok, dcg.gain(got), 0.0)),
    kernels.discounted_cumsum(dcg.gain(ideal)),
  )


def _ndcg_curves(rel, top_idx, ok):
  ideal, _ = _topk(rel, k=top_idx.shape[1])
  return _ndcg_finish(rel, top_idx, ok, ideal)


_mask = jax.jit(kernels.mask_items)


@functools.partial(jax.jit, static_argnames=("k",))
def _topk(scores, *, k: int):
  return jax.lax.top_k(scores, k)


@functools.partial(jax.jit, static_argnames=("k", "n"))
def _semantic_finish(keys, sem, ret, ideal, ideal_idx, *, k: int, n: int):
  ok = kernels.credited(keys, ret)
  sem_ret = jnp.where(ok, jnp.take_along_axis(sem, ret, axis=1), 0.0)
  hit = kernels.membership(ret, ideal_idx[:, :n]) & ok
  return (
    jnp.cumsum(sem_ret, axis=1),
    jnp.cumsum(ideal[:, :k], axis=1),
    jnp.cumsum(hit.astype(jnp.int32), axis=1) > 0,
  )


def _semantic_curves(keys, sem, gt_pos, *, k: int, n: int):
  ret = _topk_idx(_mask(keys, gt_pos), k=k)
  ideal, ideal_idx = _topk(_mask(sem, gt_pos), k=max(k, n))
  ideal = jnp.where(jnp.isneginf(ideal), 0.0, ideal)  # a (sub-)gallery of under K items
  return _semantic_finish(keys, sem, ret, ideal, ideal_idx, k=k, n=n)


@jax.jit
def _outside_removed(keys, sem, col_ok):
  """``keys`` and ``sem`` with the items outside the sub-gallery ``col_ok`` removed."""
  inside = col_ok[None]
  return (
    jnp.where(inside, keys, kernels.MASKED_KEY),
    jnp.where(inside, sem, jnp.asarray(-jnp.inf, sem.dtype)),
  )


def _semantic_outputs(keys, sem, gt_pos, col_ok, cfg: SweepConfig) -> dict:
  """NCS@K / SR@K curves with the annotated positives removed (``ncs_*``, ``sr_hit``),
  NCS@K curves with them kept (``ncs_gt_*``), and with ``cfg.with_groups`` both NCS curves
  again inside the query's sub-gallery ``col_ok`` (``group_ncs_*``)."""
  k, n = cfg.semantic_k, cfg.semantic_n
  none = jnp.full((keys.shape[0], 1), -1, gt_pos.dtype)  # no item removed
  out = dict(zip(("ncs_num", "ncs_den", "sr_hit"), _semantic_curves(keys, sem, gt_pos, k=k, n=n)))
  out["ncs_gt_num"], out["ncs_gt_den"], _ = _semantic_curves(keys, sem, none, k=k, n=n)
  if cfg.with_groups:
    keys_in, sem_in = _outside_removed(keys, sem, col_ok)
    for kind, removed in (("removed", gt_pos), ("kept", none)):
      num, den, _ = _semantic_curves(keys_in, sem_in, removed, k=k, n=n)
      out[f"group_ncs_{kind}_num"], out[f"group_ncs_{kind}_den"] = num, den
  return out


def _block_outputs(
  block, gt_pos, col_ok, ext_pos, rel, sem, cfg: SweepConfig, segment: tuple[int, int] | None = None
) -> dict:
  keys, nonfinite = _keys_and_nonfinite(block)
  out = {"nonfinite": nonfinite}
  g = block.shape[1]
  if cfg.with_gt:
    t, p, has = _best(keys, gt_pos)
    out["has"] = has
    if cfg.with_groups and segment is not None:
      counts = _rank_segments(keys, t, p, segments=segment[1])
      out["rank"] = _worst_if_nan(jnp.sum(counts, axis=1), t, g)
      out["group_rank"] = _worst_if_nan(counts[:, segment[0]], t, g // segment[1])
    else:
      out["rank"] = _worst_if_nan(_rank(keys, t, p), t, g)
      if cfg.with_groups:
        group_size = jnp.sum(col_ok, dtype=jnp.int32)
        out["group_rank"] = _worst_if_nan(_rank_in(keys, t, p, col_ok), t, group_size)
  for i in range(cfg.num_extended):
    et, ep, ehas = _best(keys, ext_pos[i])
    out[f"ext{i}_rank"] = jnp.where(ehas, _worst_if_nan(_rank(keys, et, ep), et, g), -1)
  top_idx = _topk_idx(keys, k=cfg.topk) if cfg.topk else None
  ok = _credited(keys, top_idx) if cfg.topk else None
  for i in cfg.map_sets:
    out[f"ext{i}_hits"] = _membership(top_idx, ext_pos[i]) & ok
  if cfg.ndcg_k:
    out["dcg"], out["idcg"] = _ndcg_curves(rel, top_idx[:, : cfg.ndcg_k], ok[:, : cfg.ndcg_k])
  if cfg.semantic_k:
    out.update(_semantic_outputs(keys, sem, gt_pos, col_ok, cfg))
  return out


def class_average_precision_block(
  scores: np.ndarray, relevant: np.ndarray, k: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
  """Average precision of each row over its full ranking (or its top ``k``).

  ``AP = (1/m) sum_{i=1..m} i / rank_i`` where ``rank_i`` is the 1-based rank
  of the ``i``-th relevant item and ``m`` the number of relevant items. With
  ``k``: ``AP@k = sum_{i <= k} rel_i P@i / sum_{i <= k} rel_i`` (0 when the top
  ``k`` holds no relevant item). Returns ``(ap, valid)``; rows without any
  relevant item are not valid. Exact, with the index tie-break. NaN scores
  rank last, the relevant NaN items after the other NaN items (worst case).
  """
  scores = np.asarray(scores, np.float32) + np.float32(0.0)  # -0.0 -> +0.0
  relevant = np.asarray(relevant, bool)
  b, g = scores.shape
  ap = np.zeros(b, np.float64)
  m_all = relevant.sum(axis=1)
  valid = m_all > 0
  nan_rows = np.isnan(scores).any(axis=1)
  if k is not None:
    kk = min(int(k), g)
    part = (
      np.argpartition(-scores, kk - 1, axis=1)[:, :kk] if kk < g else np.tile(np.arange(g), (b, 1))
    )
    for i in range(b):
      cand = part[i]
      order = cand[np.lexsort((cand, -scores[i, cand]))]
      if nan_rows[i]:
        order = _nan_last_order(scores[i], relevant[i])[:kk]
      rel = relevant[i, order]
      if rel.any():
        cum = np.cumsum(rel)
        ap[i] = np.sum(cum[rel] / (np.flatnonzero(rel) + 1.0)) / rel.sum()
    return ap, valid
  sorted_all = np.sort(scores, axis=1)
  has_ties = np.any(sorted_all[:, 1:] == sorted_all[:, :-1], axis=1)
  for i in range(b):
    m = int(m_all[i])
    if m == 0:
      continue
    if nan_rows[i]:
      order = _nan_last_order(scores[i], relevant[i])
      ranks = np.flatnonzero(relevant[i, order]) + 1.0
    elif has_ties[i]:
      order = np.argsort(-scores[i], kind="stable")
      ranks = np.flatnonzero(relevant[i, order]) + 1.0
    else:
      vals = np.sort(scores[i, relevant[i]])[::-1]
      ranks = g - np.searchsorted(sorted_all[i], vals, side="right") + 1.0
    ap[i] = np.sum(np.arange(1, m + 1) / ranks) / m
  return ap, valid


def _nan_last_order(row: np.ndarray, relevant: np.ndarray) -> np.ndarray:
  """Ranking of one row: score descending, index tie-break, NaN last (relevant NaN after others)."""
  nan = np.isnan(row)
  return np.lexsort((np.arange(row.size), relevant & nan, -np.where(nan, 0.0, row), nan))


def sweep(
  scores: Scores,
  gt: PositiveSets,
  *,
  cfg: SweepConfig,
  data: SweepData = SweepData(),
  query_rows: np.ndarray | None = None,
  chunk_size: int | None = None,
) -> SweepResult:
  """Runs the per-block kernel over all queries of one direction.

  Args:
    scores: the direction's (Q, G) score source.
    gt: annotated positives (Q queries over G items).
    cfg: what to compute (see :class:`SweepConfig`).
    data: the other inputs it reads (see :class:`SweepData`).
    query_rows: restrict the sweep to these queries (others get zeros).
    chunk_size: queries per block.

  Returns:
    A :class:`SweepResult` of per-query numpy arrays (length Q); queries
    outside ``query_rows`` get zeros.
  """
  q, g = scores.num_queries, scores.num_gallery
  size = chunk_size or default_chunk_size(g)
  extended, relevance, semantic = data.extended, data.relevance, data.semantic
  query_labels, gallery_labels = data.query_labels, data.gallery_labels
  folds = data.folds if cfg.with_groups else None
  sets, segments = _query_sets(q, g, folds)
  if query_rows is not None:
    keep = np.zeros(q, bool)
    keep[np.asarray(query_rows)] = True
    sets = [(rows[keep[rows]], ok) for rows, ok in sets]
  with_class = query_labels is not None
  glab = np.asarray(gallery_labels, np.float32) if with_class else None
  results: dict[str, np.ndarray] = {}

  def store(name, rows, n, value):
    value = np.asarray(value)[:n]
    if name not in results:
      results[name] = np.zeros((q,) + value.shape[1:], value.dtype)
    results[name][rows[:n]] = value

  dummy = jnp.zeros((1,), jnp.float32)
  for m, (set_rows, col_ok) in enumerate(sets):
    if set_rows.size == 0:
      continue
    col_ok_j = jnp.asarray(col_ok) if col_ok is not None else jnp.zeros((1,), bool)
    for rows, n in iter_chunks(set_rows, size):
      block = scores.block(rows)
      rel = relevance.block(rows) if cfg.ndcg_k else dummy
      if cfg.semantic_k:
        sem = rel if semantic is relevance and cfg.ndcg_k else semantic.block(rows)
      else:
        sem = dummy
      out = _block_outputs(
        block,
        jnp.asarray(gt.indices[rows]),
        col_ok_j,
        tuple(jnp.asarray(e.indices[rows]) for e in extended),
        rel,
        sem,
        cfg,
        segment=(m, segments) if segments else None,
      )
      for name, value in out.items():
        store(name, rows, n, value)
      if with_class:
        qlab = np.asarray(query_labels[rows], np.float32)
        relevant = (qlab @ glab.T) > 0.5
        ap, valid = class_average_precision_block(np.asarray(block), relevant, cfg.class_map_k)
        store("class_ap", rows, n, ap)
        store("class_valid", rows, n, valid)
  return _as_result(results, cfg)


def _query_sets(
  q: int, g: int, folds: FoldGroups | None
) -> tuple[list[tuple[np.ndarray, np.ndarray | None]], int | None]:
  """``[(query rows, gallery mask or None)]`` per sub-gallery, and the segment count.

  Without ``folds`` all queries rank over the whole gallery. When the groups
  are equal contiguous column segments (the COCO layout) the count is returned,
  so one counting pass gives both the full and the in-group rank.
  """
  if folds is None:
    return [(np.arange(q), None)], None
  groups, group_of_query = folds
  f = groups.shape[0]
  sets = [(np.flatnonzero(group_of_query == m), np.asarray(groups[m], bool)) for m in range(f)]
  contiguous = g % f == 0 and np.array_equal(
    groups, (np.arange(g) // (g // f))[None] == np.arange(f)[:, None]
  )
  return sets, (f if contiguous else None)


def _as_result(arrays: dict[str, np.ndarray], cfg: SweepConfig) -> SweepResult:
  """The typed result from the per-name arrays the block loop filled."""
  rank, group_rank = arrays.get("rank"), arrays.get("group_rank")
  if rank is not None and "has" in arrays:
    rank = np.where(arrays["has"], rank, -1)
    if group_rank is not None:
      group_rank = np.where(arrays["has"], group_rank, -1)
  return SweepResult(
    rank=rank,
    group_rank=group_rank,
    extended_rank=tuple(arrays.get(f"ext{i}_rank") for i in range(cfg.num_extended)),
    extended_hits={i: arrays[f"ext{i}_hits"] for i in cfg.map_sets if f"ext{i}_hits" in arrays},
    dcg=arrays.get("dcg"),
    idcg=arrays.get("idcg"),
    ncs_num=arrays.get("ncs_num"),
    ncs_den=arrays.get("ncs_den"),
    sr_hit=arrays.get("sr_hit"),
    ncs_gt_num=arrays.get("ncs_gt_num"),
    ncs_gt_den=arrays.get("ncs_gt_den"),
    group_ncs={
      kind: (arrays[f"group_ncs_{kind}_num"], arrays[f"group_ncs_{kind}_den"])
      for kind in ("removed", "kept")
      if f"group_ncs_{kind}_num" in arrays
    },
    class_ap=arrays.get("class_ap"),
    class_valid=arrays.get("class_valid"),
    nonfinite=arrays.get("nonfinite"),
  )
