"""Recall@K, median and mean rank from the ranks of the best positives.

With ``rank_q`` the 0-based rank of query ``q``'s best positive (see
:mod:`jitr.evaluation.ranks`) over the ``N`` queries that have one:

    R@K   = (1/N) sum_q [rank_q < K]
    medr  = floor(median_q rank_q) + 1          (VSE++ convention)
    meanr = (1/N) sum_q rank_q + 1
    RSUM  = sum over both directions and K in {1, 5, 10} of R@K (in percent)
    M-Recall (mR) = RSUM / 6  (the mean of the six recalls)

Queries with rank ``-1`` (no positive) are left out, except in
:func:`recall_at_k` with ``count_missing=True`` where they count as misses
(the extended-positive protocols, whose queries all have a positive set even
if none of it is in the gallery).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from jitr.evaluation.checks import check_ks
from jitr.evaluation.positives import PositiveSets
from jitr.evaluation.ranks import best_positive_ranks

__all__ = ["recall_at_k", "median_rank", "mean_rank", "rsum", "mean_recall", "retrieval_recall"]


def recall_at_k(
  ranks: np.ndarray, ks: Sequence[int] = (1, 5, 10), *, valid: np.ndarray | None = None
) -> dict[int, float]:
  """``{K: R@K}`` as fractions in [0, 1].

  Args:
    ranks: ``(Q,)`` 0-based ranks of the best positive; ``-1`` = not found.
    ks: the cut-offs.
    valid: ``(Q,)`` bool, queries to average over (default ``ranks >= 0``);
      valid queries with rank ``-1`` count as misses.

  >>> import numpy as np
  >>> recall_at_k(np.array([0, 3, -1, 9]), (1, 5))
  {1: 0.3333333333333333, 5: 0.6666666666666666}
  """
  ks = check_ks(ks)
  ranks = np.asarray(ranks)
  if ranks.ndim != 1:
    raise ValueError(f"`ranks` must be 1-D, got shape {ranks.shape}")
  valid = ranks >= 0 if valid is None else np.asarray(valid, bool)
  n = int(valid.sum())
  if n == 0:
    return {k: float("nan") for k in ks}
  r = ranks[valid]
  return {k: float(np.mean((r >= 0) & (r < k))) for k in ks}


def median_rank(ranks: np.ndarray) -> float:
  """``floor(median(rank)) + 1`` over queries with a positive (1-based)."""
  r = np.asarray(ranks)
  r = r[r >= 0]
  return float(np.floor(np.median(r)) + 1) if r.size else float("nan")


def mean_rank(ranks: np.ndarray) -> float:
  """``mean(rank) + 1`` over queries with a positive (1-based)."""
  r = np.asarray(ranks)
  r = r[r >= 0]
  return float(np.mean(r) + 1) if r.size else float("nan")


def rsum(
  i2t: Mapping[int, float], t2i: Mapping[int, float], ks: Sequence[int] = (1, 5, 10)
) -> float:
  """``sum_K (R@K_i2t + R@K_t2i)`` in the units of the inputs."""
  return float(sum(i2t[k] + t2i[k] for k in ks))


def mean_recall(
  i2t: Mapping[int, float], t2i: Mapping[int, float], ks: Sequence[int] = (1, 5, 10)
) -> float:
  """M-Recall: the mean of the ``2 * len(ks)`` recalls (``RSUM / 6``)."""
  return rsum(i2t, t2i, ks) / (2 * len(ks))


def retrieval_recall(
  scores, positives: PositiveSets, *, ks: Sequence[int] = (1, 5, 10), chunk_size: int | None = None
) -> dict[str, float]:
  """One direction's ``R@K`` (fractions), ``medr`` and ``meanr``.

  Args:
    scores: ``(Q, G)`` scores (array or Scores source), higher = better.
    positives: each query's annotated positives.
    ks: cut-offs.
  """
  ranks, _ = best_positive_ranks(scores, positives, chunk_size=chunk_size)
  out = {f"R@{k}": v for k, v in recall_at_k(ranks, ks).items()}
  out["medr"] = median_rank(ranks)
  out["meanr"] = mean_rank(ranks)
  return out
