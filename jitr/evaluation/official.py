"""The official protocol: Recall@K exactly as the official ``evaluation.py`` of VSE++, VSRN,
SGRAF, CVSE and VSE∞ computes it, ties included, and as LSEH's ``evaluationIAPRTC12.py``
does with one caption per image.

jitr's own ranks (:func:`jitr.evaluation.best_positive_ranks`) break a tie between equal
scores by the lower index. The official ``i2t`` / ``t2i`` sort each query's scores with
``np.argsort(scores)[::-1]``: numpy's default (not stable) sort, reversed, so equal scores
come out in an order that numpy's sort decides, usually not index order. On a similarity
matrix with exact ties (duplicate captions or images, a saturated sigmoid) the two can
give other Recall@K; everywhere else they agree. This module calls that same numpy sort,
query by query, so its numbers are the official code's for the same matrix:

- ``i2t``: image ``i`` owns captions ``Ki .. Ki+K-1`` (``K`` captions per image: 5, or 1
  for IAPR TC-12, whose ``i2t`` loops over ``range(index, index + 1)``); its rank is the
  smallest position of one of them in ``argsort(sim[i])[::-1]``.
- ``t2i``: caption ``j``'s rank is the position of image ``j // K`` in
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


def _check(sim: np.ndarray, per_image: int) -> np.ndarray:
  sim = np.asarray(sim, np.float64)  # the official code scores into np.zeros (float64)
  if sim.ndim != 2 or sim.shape[1] != per_image * sim.shape[0]:
    raise ValueError(
      f"sim: expected [N images, {per_image}N captions] with image i owning captions "
      f"{per_image}i..{per_image}i+{per_image - 1}, got shape {np.shape(sim)}"
    )
  return sim


def official_i2t_ranks(sim: np.ndarray, per_image: int = CAPTIONS_PER_IMAGE) -> np.ndarray:
  """``[N]`` 0-based ranks: for image ``i``, the best position of its own ``per_image``
  captions in ``np.argsort(sim[i])[::-1]``."""
  sim = _check(sim, per_image)
  ranks = np.zeros(sim.shape[0])
  for index in range(sim.shape[0]):
    order = np.argsort(sim[index])[::-1]
    own = np.arange(per_image * index, per_image * (index + 1))
    ranks[index] = np.flatnonzero(np.isin(order, own))[0]
  return ranks


def official_t2i_ranks(sim: np.ndarray, per_image: int = CAPTIONS_PER_IMAGE) -> np.ndarray:
  """``[KN]`` 0-based ranks: for caption ``j``, the position of image ``j // K`` (``K =
  per_image``) in ``np.argsort(sim[:, j])[::-1]``."""
  sim = _check(sim, per_image).T
  ranks = np.zeros(sim.shape[0])
  for caption in range(sim.shape[0]):
    order = np.argsort(sim[caption])[::-1]
    ranks[caption] = np.flatnonzero(order == caption // per_image)[0]
  return ranks


def _summary(ranks: np.ndarray) -> dict[str, float]:
  out = {f"R@{k}": 100.0 * len(np.where(ranks < k)[0]) / len(ranks) for k in (1, 5, 10)}
  out["medr"] = float(np.floor(np.median(ranks)) + 1)
  out["meanr"] = float(ranks.mean() + 1)
  return out


def official_recall(sim: np.ndarray, per_image: int = CAPTIONS_PER_IMAGE) -> dict[str, float]:
  """``{i2t,t2i}/{R@1,R@5,R@10,medr,meanr}`` and ``rsum`` of the official ``i2t`` / ``t2i``
  on the whole matrix (F30K 1K test, COCO 5K ``testall``, IAPR TC-12 with ``per_image``
  1)."""
  out = {}
  ranks_of = (official_i2t_ranks(sim, per_image), official_t2i_ranks(sim, per_image))
  for name, ranks in zip(("i2t", "t2i"), ranks_of, strict=True):
    out.update({f"{name}/{k}": v for k, v in _summary(ranks).items()})
  out["rsum"] = sum(out[f"{d}/R@{k}"] for d in ("i2t", "t2i") for k in (1, 5, 10))
  return out


def official_fold5_recall(sim: np.ndarray) -> dict[str, float]:
  """COCO 1K as the official ``evalrank(..., fold5=True)``: :func:`official_recall` of each
  of the five 1,000-image folds (``fold{f}/...``) and their means (the keys without a
  prefix)."""
  sim = _check(sim, CAPTIONS_PER_IMAGE)
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
