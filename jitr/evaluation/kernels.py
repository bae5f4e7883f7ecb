"""Per-block kernels: pure ``jnp`` functions on a ``(B, G)`` block of scores.

Each function works on ``B`` query rows at once against the full gallery of
``G`` items and returns per-query arrays; :mod:`jitr.evaluation.engine` jits
them together so that every block of scores is read once for all metrics.

Ranking convention everywhere: score descending, ties broken by the lower
gallery index (``jax.lax.top_k`` order, ``np.argsort(-s, kind="stable")``).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jitr.losses import dcg

__all__ = [
  "best_positive",
  "rank_of",
  "membership",
  "mask_items",
  "discounted_cumsum",
]


def best_positive(scores: jax.Array, pos: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Score ``t``, gallery index ``p`` and validity of each row's best positive.

  ``pos`` is ``(B, P)`` int32 with ``-1`` padding. The best positive has the
  highest score, the lowest index among equal scores (it is ranked first).
  """
  chex.assert_rank([scores, pos], 2)
  chex.assert_equal_shape_prefix([scores, pos], 1)
  valid = pos >= 0
  safe = jnp.where(valid, pos, 0)
  got = jnp.take_along_axis(scores, safe, axis=1)
  got = jnp.where(valid, got, -jnp.inf)
  best = jnp.max(got, axis=1)
  big = jnp.int32(scores.shape[1])
  best_idx = jnp.min(jnp.where(valid & (got == best[:, None]), safe, big), axis=1)
  has = jnp.any(valid, axis=1)
  return jnp.where(has, best, 0.0), jnp.where(has, best_idx, 0), has


def rank_of(
  scores: jax.Array, t: jax.Array, p: jax.Array, col_ok: jax.Array | None = None
) -> jax.Array:
  """0-based rank of item ``p`` (score ``t``) in each row, by counting.

  ``rank = #{j : s_j > t} + #{j < p : s_j = t}`` over the columns where
  ``col_ok`` (a ``(G,)`` bool, default all) holds.
  """
  chex.assert_rank(scores, 2)
  chex.assert_shape([t, p], (scores.shape[0],))
  col = jnp.arange(scores.shape[1], dtype=jnp.int32)
  before = (scores > t[:, None]) | ((scores == t[:, None]) & (col[None] < p[:, None]))
  if col_ok is not None:
    before = before & col_ok[None]
  return jnp.sum(before, axis=1, dtype=jnp.int32)


def membership(items: jax.Array, pos: jax.Array) -> jax.Array:
  """``(B, k)`` bool: whether ``items[b, i]`` is one of the positives ``pos[b]``."""
  chex.assert_rank([items, pos], 2)
  chex.assert_equal_shape_prefix([items, pos], 1)
  eq = (items[:, :, None] == pos[:, None, :]) & (pos[:, None, :] >= 0)
  return jnp.any(eq, axis=2)


def mask_items(scores: jax.Array, items: jax.Array) -> jax.Array:
  """Sets ``scores[b, items[b, i]]`` to ``-inf`` (``-1`` entries ignored).

  Written as compares + select (a scatter is much slower on XLA:CPU).
  """
  chex.assert_rank([scores, items], 2)
  chex.assert_equal_shape_prefix([scores, items], 1)
  col = jnp.arange(scores.shape[1], dtype=items.dtype)
  hit = jnp.zeros(scores.shape, bool)
  for i in range(items.shape[1]):
    hit = hit | (col[None] == items[:, i : i + 1])
  return jnp.where(hit, -jnp.inf, scores)


def discounted_cumsum(gains: jax.Array) -> jax.Array:
  """``DCG@K = sum_{i<=K} g_i / log2(1 + i)`` for every ``K <= k``: ``(B, k)``.

  ``gains`` is ``(B, k)``, already in rank order (``dcg.gain`` of the retrieved
  or ideal relevances); the discount is :func:`jitr.losses.dcg.discount`, the
  one the Smooth-NDCG loss uses.
  """
  chex.assert_rank(gains, 2)
  positions = jnp.arange(1, gains.shape[1] + 1, dtype=jnp.float32)
  return jnp.cumsum(gains * dcg.discount(positions)[None], axis=1)
