"""How well an estimated relevance matrix matches the exact one, per query and in value.

For query rows ``est, exact [Q, G]`` (image queries: the matrices; caption
queries: their transposes):

* ``NDCG@K`` -- ranking the gallery by ``est`` itself (score descending, ties in
  index order, :func:`jitr.evaluation.ndcg_at_k`) with the exact relevance as gain;
* ``mAP@R`` -- the same ranking against the positive set ``{j: exact_qj >= 1}``
  (:func:`jitr.evaluation.extended_metrics`, the ECCV Caption protocol);
* ``MAE`` -- ``mean |est − exact|`` over the pairs that are not annotated positives;
* ``gain@0`` -- ``mean (2^est − 1)`` over the pairs whose exact relevance is 0: how
  much DCG gain the estimate gives to captions that do not match at all (1 would
  be a positive's gain).

An estimate equal to the exact relevance scores NDCG = mAP@R = 1, MAE = gain@0 = 0.
A constant estimate ranks in index order (the tie rule).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jitr.evaluation.eccv import extended_metrics
from jitr.evaluation.ndcg import ndcg_at_k
from jitr.evaluation.positives import positives_from_lists


def ranking_quality(
  estimated: np.ndarray, exact: np.ndarray, *, ks: Sequence[int] = (10,)
) -> dict[str, float]:
  """``{"NDCG@K": ..., "mAP@R": ...}`` (fractions) of ranking each query's gallery by
  ``estimated [Q, G]``, judged by ``exact [Q, G]`` (see the module docstring).

  >>> est = np.array([[0.9, 0.5, 0.7]])
  >>> exact = np.array([[1.0, 0.0, 1.0]])
  >>> {k: round(v, 4) for k, v in ranking_quality(est, exact, ks=(2,)).items()}
  {'NDCG@2': 1.0, 'mAP@R': 1.0}
  """
  estimated = np.asarray(estimated, np.float32)
  exact = np.asarray(exact, np.float32)
  if estimated.shape != exact.shape or estimated.ndim != 2:
    raise ValueError(
      f"estimated {estimated.shape} and exact {exact.shape}: expected two [Q, G] matrices"
    )
  out = ndcg_at_k(estimated, exact, ks=ks)
  ones = exact >= 1.0
  positives = positives_from_lists([np.flatnonzero(r) for r in ones], num_gallery=exact.shape[1])
  out["mAP@R"] = extended_metrics(estimated, positives, ks=(1,))["mAP@R"]
  return out


def value_errors(
  estimated: np.ndarray, exact: np.ndarray, positives: np.ndarray
) -> dict[str, float]:
  """``{"MAE": ..., "gain@0": ...}`` of ``estimated`` against ``exact`` (see the module
  docstring); ``positives``: bool, the annotated pairs (left out of MAE).

  >>> est, exact = np.array([[1.0, 0.5, 0.2]]), np.array([[1.0, 0.0, 0.4]])
  >>> pos = np.array([[True, False, False]])
  >>> {k: round(v, 4) for k, v in value_errors(est, exact, pos).items()}  # (0.5 + 0.2)/2, 2^.5-1
  {'MAE': 0.35, 'gain@0': 0.4142}
  """
  estimated = np.asarray(estimated, np.float64)
  exact = np.asarray(exact, np.float64)
  positives = np.asarray(positives, bool)
  rest = ~positives
  zero = (exact <= 0) & rest
  return {
    "MAE": float(np.mean(np.abs(estimated - exact)[rest])) if rest.any() else float("nan"),
    "gain@0": float(np.mean(np.exp2(estimated[zero]) - 1.0)) if zero.any() else float("nan"),
  }
