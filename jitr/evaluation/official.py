"""The official protocol: Recall@K exactly as the official ``evaluation.py`` of VSE++, VSRN,
SGRAF and CVSE computes it, ties included.

jitr's own ranks (:func:`jitr.evaluation.best_positive_ranks`) break a tie between equal
scores by the lower index. The official ``i2t`` / ``t2i`` sort each query's scores with
``np.argsort(scores)[::-1]``: numpy's default (not stable) sort, reversed, so equal scores
come out in an order that numpy's sort decides, usually not index order. On a similarity
matrix with exact ties (duplicate captions or images, a saturated sigmoid) the two can
give other Recall@K; everywhere else they agree. This module calls that same numpy sort,
query by query, so its numbers are the official code's for the same matrix:

- ``i2t``: image ``i`` owns captions ``5i .. 5i+4``; its rank is the smallest position of
  one of them in ``argsort(sim[i])[::-1]``.
- ``t2i``: caption ``j``'s rank is the position of image ``j // 5`` in
  ``argsort(sim[:, j])[::-1]``.
- ``R@K = 100 · #{rank < K} / #queries``, ``medr = floor(median(rank)) + 1``,
  ``meanr = mean(rank) + 1``, ``rsum`` = the six R@1/5/10.
- COCO 1K (``fold5``): five folds of 1,000 images (rows ``1000 f .. 1000 f + 999`` and
  their 5,000 captions), each scored alone, and every number averaged over the folds. The
  official printout labels the means one place off (its "rsum" is 6x the mean i2t recall,
  its "Average t2i Recall" the mean rsum); the values here are the means themselves.
"""

from __future__ import annotations

import numpy as np

CAPTIONS_PER_IMAGE = 5
FOLDS = 5


def _check(sim: np.ndarray) -> np.ndarray:
  sim = np.asarray(sim, np.float64)  # the official code scores into np.zeros (float64)
  if sim.ndim != 2 or sim.shape[1] != CAPTIONS_PER_IMAGE * sim.shape[0]:
    raise ValueError(
      f"sim: expected [N images, {CAPTIONS_PER_IMAGE}N captions] with image i owning captions "
      f"{CAPTIONS_PER_IMAGE}i..{CAPTIONS_PER_IMAGE}i+4, got shape {np.shape(sim)}"
    )
  return sim


def official_i2t_ranks(sim: np.ndarray) -> np.ndarray:
  """``[N]`` 0-based ranks: for image ``i``, the best position of its own captions in
  ``np.argsort(sim[i])[::-1]``."""
  sim = _check(sim)
  ranks = np.zeros(sim.shape[0])
  for index in range(sim.shape[0]):
    order = np.argsort(sim[index])[::-1]
    own = np.arange(CAPTIONS_PER_IMAGE * index, CAPTIONS_PER_IMAGE * (index + 1))
    ranks[index] = np.flatnonzero(np.isin(order, own))[0]
  return ranks


def official_t2i_ranks(sim: np.ndarray) -> np.ndarray:
  """``[5N]`` 0-based ranks: for caption ``j``, the position of image ``j // 5`` in
  ``np.argsort(sim[:, j])[::-1]``."""
  sim = _check(sim).T
  ranks = np.zeros(sim.shape[0])
  for caption in range(sim.shape[0]):
    order = np.argsort(sim[caption])[::-1]
    ranks[caption] = np.flatnonzero(order == caption // CAPTIONS_PER_IMAGE)[0]
  return ranks


def _summary(ranks: np.ndarray) -> dict[str, float]:
  out = {f"R@{k}": 100.0 * len(np.where(ranks < k)[0]) / len(ranks) for k in (1, 5, 10)}
  out["medr"] = float(np.floor(np.median(ranks)) + 1)
  out["meanr"] = float(ranks.mean() + 1)
  return out


def official_recall(sim: np.ndarray) -> dict[str, float]:
  """``{i2t,t2i}/{R@1,R@5,R@10,medr,meanr}`` and ``rsum`` of the official ``i2t`` / ``t2i``
  on the whole matrix (F30K 1K test, COCO 5K ``testall``)."""
  out = {}
  for name, ranks in (("i2t", official_i2t_ranks(sim)), ("t2i", official_t2i_ranks(sim))):
    out.update({f"{name}/{k}": v for k, v in _summary(ranks).items()})
  out["rsum"] = sum(out[f"{d}/R@{k}"] for d in ("i2t", "t2i") for k in (1, 5, 10))
  return out


def official_fold5_recall(sim: np.ndarray) -> dict[str, float]:
  """COCO 1K as the official ``evalrank(..., fold5=True)``: :func:`official_recall` of each
  of the five 1,000-image folds (``fold{f}/...``) and their means (the keys without a
  prefix)."""
  sim = _check(sim)
  if sim.shape[0] % FOLDS:
    raise ValueError(f"sim: {sim.shape[0]} images do not split into {FOLDS} folds")
  n = sim.shape[0] // FOLDS
  folds = [
    official_recall(
      sim[f * n : (f + 1) * n, f * n * CAPTIONS_PER_IMAGE : (f + 1) * n * CAPTIONS_PER_IMAGE]
    )
    for f in range(FOLDS)
  ]
  out = {key: float(np.mean([fold[key] for fold in folds])) for key in folds[0]}
  for f, fold in enumerate(folds):
    out.update({f"fold{f}/{key}": value for key, value in fold.items()})
  return out
