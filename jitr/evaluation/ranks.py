"""Exact rank of each query's best positive, computed by counting (no sort).

Ranking convention (used by every metric in :mod:`jitr.evaluation`): gallery
items are ordered by score descending, ties broken by the lower gallery index
first -- the order of ``np.argsort(-s, kind="stable")`` and of
``jax.lax.top_k``. The 0-based rank of item ``p`` in row ``s`` is

    rank(p) = #{j : s_j > s_p} + #{j < p : s_j = s_p}.

The *best positive* of a query is its positive ranked first (highest score,
lowest index among equal scores); its rank is the one Recall@K and the
median / mean rank use (VSE++ convention: an image query is answered as soon
as any of its captions is retrieved). It is computed by counting over each
row of a block -- one pass, no sort -- so any K, and the exact median and
mean rank, come for free.

Non-finite scores: NaN ranks below every other score, ``-inf`` included, and a
best positive whose score is NaN (every positive of the query is NaN) gets
rank ``G``, the gallery size: not retrieved, a miss at every K <= G.
"""

from __future__ import annotations

import numpy as np

from jitr.evaluation.checks import check_sizes
from jitr.evaluation.engine import SweepConfig, SweepData, sweep
from jitr.evaluation.folds import FoldGroups
from jitr.evaluation.positives import PositiveSets
from jitr.evaluation.sources import as_scores

__all__ = ["best_positive_ranks", "best_positive_ranks_reference"]


def best_positive_ranks(
  scores,
  positives: PositiveSets,
  *,
  groups: np.ndarray | None = None,
  group_of_query: np.ndarray | None = None,
  chunk_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
  """0-based rank of each query's best positive.

  Args:
    scores: (Q, G) array or :class:`~jitr.evaluation.sources.Scores` source.
    positives: ground truth for the Q queries.
    groups: optional ``(M, G)`` bool: M sub-galleries (e.g. the COCO 1K folds).
    group_of_query: ``(Q,)`` int, the sub-gallery each query is also ranked
      in (required with ``groups``).
    chunk_size: queries per block.

  Returns:
    ``(ranks, sub_ranks)``: ``(Q,)`` int arrays, ``-1`` for queries without a
    positive; ``sub_ranks`` (None without ``groups``) counts only the items of
    the query's sub-gallery. The best positive is the one ranked first in the
    full gallery, so the query's positives should lie in its sub-gallery. Scores
    compare as XLA computes them: a float32 subnormal (``|s| < 1.18e-38``) counts as 0.
  """
  src = as_scores(scores)
  q, g = src.num_queries, src.num_gallery
  check_sizes("positives", (positives.num_queries, positives.num_gallery), (q, g), "scores")
  with_groups = groups is not None
  if with_groups:
    groups = np.asarray(groups, bool)
    if groups.ndim != 2 or groups.shape[1] != g:
      raise ValueError(f"`groups` must have shape (M, {g}), got {groups.shape}")
    if group_of_query is None:
      raise ValueError("`group_of_query` is required when `groups` is given")
    group_of_query = np.asarray(group_of_query)
    if (
      group_of_query.shape != (q,)
      or group_of_query.min() < 0
      or (group_of_query.max() >= groups.shape[0])
    ):
      raise ValueError(
        f"`group_of_query` must be ({q},) indices into the {groups.shape[0]} "
        f"rows of `groups`, got shape {group_of_query.shape}"
      )
  out = sweep(
    src,
    positives,
    cfg=SweepConfig(with_groups=with_groups),
    data=SweepData(folds=FoldGroups(groups, group_of_query) if with_groups else None),
    chunk_size=chunk_size,
  )
  return out.rank.astype(np.int64), (out.group_rank.astype(np.int64) if with_groups else None)


def best_positive_ranks_reference(scores: np.ndarray, positives: PositiveSets) -> np.ndarray:
  """Plain numpy version (a full stable argsort per row, NaN last), for tests. A float32
  subnormal score (``|s| <`` :attr:`numpy.finfo` ``tiny``) counts as 0, as in
  :func:`best_positive_ranks`, whose XLA comparisons flush subnormals to zero."""
  scores = np.asarray(scores, np.float32) + np.float32(0.0)
  scores = np.where(np.abs(scores) < np.finfo(np.float32).tiny, np.float32(0.0), scores)
  out = np.full(scores.shape[0], -1, np.int64)
  for i, row in enumerate(scores):
    pos = positives.indices[i][positives.indices[i] >= 0]
    if pos.size == 0:
      continue
    if np.isnan(row[pos]).all():
      out[i] = row.size
      continue
    order = np.argsort(-row, kind="stable")
    where = np.empty_like(order)
    where[order] = np.arange(order.size)
    out[i] = where[pos].min()
  return out
