"""Metrics with arbitrary positive sets per query (the ECCV Caption protocol).

For a query with positive set ``P`` (``R = |P|``, which may include items
outside the gallery) and ``h_i`` = whether the item ranked ``i`` is in ``P``:

    P@i        = (1/i) sum_{j<=i} h_j
    mAP@R      = (1/R) sum_{i=1..R} h_i P@i
    R-Precision = P@R
    R@K        = [some item of P is ranked within the top K]

each averaged over the queries with ``R > 0`` -- exactly the definitions of
``eccv_caption`` (Chun et al., ECCV 2022), which this module reproduces on its
COCO annotations (ECCV Caption, CxC, original COCO). mAP@R and R-P need the
top ``max R`` items of every query with ``R > 0`` (a jitted ``top_k`` per
block, ties in index order, in a pass over those queries only); R@K needs only
the rank of the best positive (a counting pass), so any K is exact.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jitr.evaluation import recall as recall_lib
from jitr.evaluation.checks import check_ks, check_sizes
from jitr.evaluation.engine import SweepConfig, SweepData, sweep
from jitr.evaluation.positives import PositiveSets
from jitr.evaluation.sources import as_scores

__all__ = ["extended_metrics", "map_at_r_from_hits", "map_rows", "summarize_extended"]


def map_at_r_from_hits(
  hits: np.ndarray, num_positives: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
  """Per-query mAP@R and R-Precision from the top-``k`` hit pattern (float64).

  ``hits[q, i]`` says whether the item ranked ``i + 1`` is a positive of
  ``q``; ``k >= R_q`` is required. Queries with ``R = 0`` get 0.

  >>> ap, rp = map_at_r_from_hits(np.array([[True, False, True]]), np.array([3]))
  >>> print(round(float(ap[0]), 4), round(float(rp[0]), 4))  # (1 + 2/3) / 3, 2/3
  0.5556 0.6667
  """
  hits = np.asarray(hits, bool)
  r = np.asarray(num_positives, np.int64)
  k = hits.shape[1]
  if np.any(r > k):
    raise ValueError(f"`hits` has {k} columns but some query has R = {r.max()} > {k}")
  pos = np.arange(1, k + 1)
  h = hits & (pos[None] <= r[:, None])
  cum = np.cumsum(h, axis=1)
  rf = np.maximum(r, 1).astype(np.float64)
  ap = np.sum(np.where(h, cum / pos[None], 0.0), axis=1) / rf
  rp = cum[np.arange(len(r)), np.clip(r - 1, 0, k - 1)] / rf
  zero = r <= 0
  return np.where(zero, 0.0, ap), np.where(zero, 0.0, rp)


def summarize_extended(
  rank: np.ndarray, hits: np.ndarray | None, num_positives: np.ndarray, ks: Sequence[int]
) -> dict[str, float]:
  """``R@K`` (and ``mAP@R``, ``R-P`` when ``hits`` is given), fractions.

  Means over the queries with ``R > 0``. ``rank`` is the 0-based rank of each
  query's best positive (-1: none in the gallery, a miss); ``hits`` the
  ``(Q, k)`` top-k hit pattern with ``k >= max R``.
  """
  valid = np.asarray(num_positives) > 0
  out = {f"R@{k}": v for k, v in recall_lib.recall_at_k(rank, ks, valid=valid).items()}
  if hits is not None:
    if valid.any():
      ap, rp = map_at_r_from_hits(hits, np.where(valid, num_positives, 0))
      out["mAP@R"] = float(np.mean(ap[valid]))
      out["R-P"] = float(np.mean(rp[valid]))
    else:
      out["mAP@R"] = out["R-P"] = float("nan")
  return out


def map_rows(positive_sets: Sequence[PositiveSets]) -> np.ndarray:
  """Queries with ``R > 0`` in any of the sets (the rows the top-k pass needs)."""
  return np.flatnonzero(np.any([p.num_positives > 0 for p in positive_sets], axis=0))


def extended_metrics(
  scores,
  positives: PositiveSets,
  *,
  ks: Sequence[int] = (1, 5, 10),
  with_map: bool = True,
  chunk_size: int | None = None,
) -> dict[str, float]:
  """One direction's ``R@K``, ``mAP@R`` and ``R-P`` (fractions).

  Args:
    scores: ``(Q, G)`` scores (array or Scores source).
    positives: each query's positive set; ``num_positives`` is ``R``.
    ks: recall cut-offs (any K: R@K uses the exact rank of the best positive).
    with_map: also compute mAP@R and R-Precision (a top-``max R`` pass over
      the queries with ``R > 0``).
  """
  src = as_scores(scores)
  want = (src.num_queries, src.num_gallery)
  check_sizes("positives", (positives.num_queries, positives.num_gallery), want, "scores")
  ks = check_ks(ks)
  res = sweep(
    src,
    positives,
    cfg=SweepConfig(num_extended=1, with_gt=False),
    data=SweepData(extended=(positives,)),
    chunk_size=chunk_size,
  )
  hits = None
  if with_map:
    topk = min(int(positives.num_positives.max(initial=1)), src.num_gallery)
    hits = sweep(
      src,
      positives,
      cfg=SweepConfig(map_sets=(0,), topk=topk, with_gt=False),
      data=SweepData(extended=(positives,)),
      query_rows=map_rows([positives]),
      chunk_size=chunk_size,
    ).extended_hits.get(0)
  return summarize_extended(res.extended_rank[0], hits, positives.num_positives, ks)
