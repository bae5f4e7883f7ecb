"""NDCG@K with graded relevance, the convention of :mod:`jitr.losses`.

For a query with relevance ``r_j`` of gallery item ``j`` and the model's
ranking ``pi`` (score descending, index tie-break):

    DCG@K  = sum_{i=1..K} (2^{r_{pi(i)}} - 1) / log2(1 + i)
    IDCG@K = the same sum over the relevances sorted descending (ties get
             distinct positions)
    NDCG@K = DCG@K / IDCG@K

averaged over the queries with ``IDCG@K > 0`` (queries with no relevant item
are excluded). Computed per block: a jitted ``top_k`` of the scores gathers
the retrieved relevances, a ``top_k`` of the relevance gives the ideal.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jitr.evaluation.checks import check_ks
from jitr.evaluation.engine import SweepConfig, SweepData, sweep
from jitr.evaluation.positives import PositiveSets
from jitr.evaluation.sources import as_scores, scores_like

__all__ = ["ndcg_at_k", "summarize_ndcg"]


def summarize_ndcg(dcg: np.ndarray, idcg: np.ndarray, ks: Sequence[int]) -> dict[str, float]:
  """``{"NDCG@K": mean over queries with IDCG@K > 0}`` from ``(Q, k)`` curves."""
  out = {}
  kmax = dcg.shape[1]
  for k in ks:
    j = min(int(k), kmax) - 1
    valid = idcg[:, j] > 0
    out[f"NDCG@{k}"] = (
      float(np.mean(dcg[valid, j] / idcg[valid, j])) if valid.any() else float("nan")
    )
  return out


def ndcg_at_k(
  scores, relevance, *, ks: Sequence[int] = (1, 5, 10, 20, 50, 100), chunk_size: int | None = None
) -> dict[str, float]:
  """One direction's NDCG@K (fractions) for every K in ``ks``.

  Args:
    scores: ``(Q, G)`` model scores (array or Scores source).
    relevance: ``(Q, G)`` graded relevance >= 0 (array or Scores source).
    ks: cut-offs (clipped to G).

  >>> import numpy as np
  >>> scores = np.array([[0.9, 0.8, 0.1]])
  >>> rel = np.array([[0.0, 1.0, 1.0]])
  >>> print(round(ndcg_at_k(scores, rel, ks=(2,))["NDCG@2"], 4))  # (1/log2 3) / (1 + 1/log2 3)
  0.3869
  """
  src = as_scores(scores)
  rel = scores_like(relevance, src, "relevance")
  ks = check_ks(ks)
  k = min(max(ks), src.num_gallery)
  none = PositiveSets.empty(src.num_queries, src.num_gallery)
  cfg = SweepConfig(topk=k, ndcg_k=k)
  res = sweep(src, none, cfg=cfg, data=SweepData(relevance=rel), chunk_size=chunk_size)
  return summarize_ndcg(res.dcg, res.idcg, ks)
