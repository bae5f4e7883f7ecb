"""Recall@K compared between two implementations, aware of the ties float rounding can break.

Two implementations of one model (the official code transcribed in PyTorch, and jitr) give
similarities equal to about 1e-6, not bit for bit: threads and kernels round differently. A
query whose decisive score lies within that distance of another candidate's has no one
right rank: either order is a correct reading of the model. :func:`rank_bounds` gives each
query's rank with every such near-tie broken for its positive and against it;
:func:`assert_recall_within_ties` checks that reported Recall@K, median and mean ranks lie
between the two (equal to both wherever no near-tie decides a rank) and that near-ties
decide few queries, so the comparison stays a test."""

from __future__ import annotations

import numpy as np


def rank_bounds(sim, caption_image, *, eps: float):
  """``((best i2t, best t2i), (worst i2t, worst t2i))`` 0-based ranks of every query.

  Image ``i``'s rank counts the other images' captions scored above its best own caption
  (the official protocol's first own caption); caption ``c``'s counts the images scored
  above its own image. Best: only scores more than ``eps`` above count; worst: every score
  at least the decisive one less ``eps`` counts."""
  sim = np.asarray(sim, np.float64)
  owner = np.asarray(caption_image)
  best_i2t, worst_i2t = [], []
  for i, row in enumerate(sim):
    top, others = row[owner == i].max(), row[owner != i]
    best_i2t.append(int(np.sum(others > top + eps)))
    worst_i2t.append(int(np.sum(others >= top - eps)))
  best_t2i, worst_t2i = [], []
  for c, column in enumerate(sim.T):
    own, others = column[owner[c]], np.delete(column, owner[c])
    best_t2i.append(int(np.sum(others > own + eps)))
    worst_t2i.append(int(np.sum(others >= own - eps)))
  best = (np.array(best_i2t), np.array(best_t2i))
  worst = (np.array(worst_i2t), np.array(worst_t2i))
  return best, worst


def rank_metrics(i2t, t2i) -> dict[str, float]:
  """``full/{i2t,t2i}/{R@1,R@5,R@10,medr,meanr}`` and ``full/rsum`` of 0-based ranks, as
  the official ``i2t`` / ``t2i`` compute them."""
  out = {}
  for name, ranks in (("i2t", i2t), ("t2i", t2i)):
    for k in (1, 5, 10):
      out[f"full/{name}/R@{k}"] = 100.0 * float(np.mean(ranks < k))
    out[f"full/{name}/medr"] = float(np.floor(np.median(ranks)) + 1)
    out[f"full/{name}/meanr"] = float(np.mean(ranks) + 1)
  out["full/rsum"] = sum(out[f"full/{d}/R@{k}"] for d in ("i2t", "t2i") for k in (1, 5, 10))
  return out


def assert_recall_within_ties(
  got: dict, sim, caption_image, *, eps: float, max_tied: float = 0.1
) -> int:
  """Asserts that each :func:`rank_metrics` key of ``got`` lies between its value with
  every near-tie (within ``eps``) broken for the positives and against them, and that at
  most ``max_tied`` of the queries have a near-tie deciding their rank; returns how many
  do."""
  best, worst = rank_bounds(sim, caption_image, eps=eps)
  tied = sum(int(np.sum(b != w)) for b, w in zip(best, worst))
  queries = sum(len(b) for b in best)
  assert tied <= max_tied * queries, f"{tied} of {queries} queries decided by near-ties"
  high, low = rank_metrics(*best), rank_metrics(*worst)
  for key in sorted(set(got) & set(high)):
    lo, hi = sorted((low[key], high[key]))
    assert lo - 1e-9 <= got[key] <= hi + 1e-9, (key, got[key], (lo, hi))
  return tied


def owner_of(sim, per_image: int = 5):
  """Each caption's image in the official protocol's order: image ``i`` owns captions
  ``per_image·i … per_image·i + per_image − 1`` of ``sim [images, per_image · images]``."""
  return np.arange(np.shape(sim)[1]) // per_image
