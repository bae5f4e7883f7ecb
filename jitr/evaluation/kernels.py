"""Per-block kernels: pure ``jnp`` functions on a ``(B, G)`` block of scores.

Each function works on ``B`` query rows at once against the full gallery of
``G`` items and returns per-query arrays; :mod:`jitr.evaluation.engine` jits
them together so that every block of scores is read once for all metrics.

Ranking convention everywhere: score descending, ties broken by the lower
gallery index (``jax.lax.top_k`` order, ``np.argsort(-s, kind="stable")``).

Non-finite scores: the kernels work on :func:`order_key` of a block, an int32
with the order of the float scores in which NaN sits below ``-inf`` (and items
removed from a ranking, :data:`MASKED_KEY`, below NaN). A NaN-scored item is
never credited: a best positive whose score is NaN gets the worst rank (the
gallery size, "not retrieved"), and a NaN item in a top-k is neither a hit nor
a gain (:func:`credited`). So no metric can improve through a NaN.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jitr.losses import dcg

__all__ = [
  "MASKED_KEY",
  "NAN_KEY",
  "order_key",
  "credited",
  "nonfinite_count",
  "best_positive",
  "rank_of",
  "membership",
  "mask_items",
  "discounted_cumsum",
]


MASKED_KEY = jnp.iinfo(jnp.int32).min
"""Key of an item removed from a ranking (below everything, NaN included)."""
NAN_KEY = jnp.iinfo(jnp.int32).min + 1
"""Key of a NaN score: below every float, ``-inf`` included."""


def order_key(scores: jax.Array) -> jax.Array:
  """int32 keys ordered like the float32 ``scores``; ``-0.0 == +0.0``, NaN -> :data:`NAN_KEY`.

  Positive floats keep their bit pattern; negative ones get their 31 low bits
  flipped, so a larger magnitude gives a smaller key (``-inf`` -> ``-2**31 +
  2**23 - 1``, two steps above :data:`NAN_KEY`).
  """
  scores = scores.astype(jnp.float32)
  bits = jax.lax.bitcast_convert_type(scores, jnp.int32)
  key = jnp.where(bits < 0, bits ^ jnp.int32(0x7FFFFFFF), bits)
  key = jnp.where(scores == 0, 0, key)
  return jnp.where(jnp.isnan(scores), NAN_KEY, key)


def credited(keys: jax.Array, items: jax.Array) -> jax.Array:
  """``(B, k)`` bool: the retrieved ``items`` whose score is not NaN (they may count)."""
  return jnp.take_along_axis(keys, items, axis=1) > NAN_KEY


def nonfinite_count(scores: jax.Array) -> jax.Array:
  """``(B,)`` number of NaN / +-inf scores per row."""
  return jnp.sum(~jnp.isfinite(scores), axis=1, dtype=jnp.int32)


def best_positive(scores: jax.Array, pos: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Score ``t``, gallery index ``p`` and validity of each row's best positive.

  ``pos`` is ``(B, P)`` int32 with ``-1`` padding. The best positive has the
  highest score, the lowest index among equal scores (it is ranked first).
  ``scores`` may be floats or :func:`order_key` keys (then NaN positives lose
  to every other positive).
  """
  chex.assert_rank([scores, pos], 2)
  chex.assert_equal_shape_prefix([scores, pos], 1)
  valid = pos >= 0
  safe = jnp.where(valid, pos, 0)
  got = jnp.take_along_axis(scores, safe, axis=1)
  low = -jnp.inf if jnp.issubdtype(scores.dtype, jnp.floating) else MASKED_KEY
  got = jnp.where(valid, got, low)
  best = jnp.max(got, axis=1)
  big = jnp.int32(scores.shape[1])
  best_idx = jnp.min(jnp.where(valid & (got == best[:, None]), safe, big), axis=1)
  has = jnp.any(valid, axis=1)
  return jnp.where(has, best, 0).astype(scores.dtype), jnp.where(has, best_idx, 0), has


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
  """Sets ``scores[b, items[b, i]]`` to ``-inf`` (:data:`MASKED_KEY` for int keys).

  ``-1`` entries are ignored.

  Written as compares + select (a scatter is much slower on XLA:CPU).
  """
  chex.assert_rank([scores, items], 2)
  chex.assert_equal_shape_prefix([scores, items], 1)
  col = jnp.arange(scores.shape[1], dtype=items.dtype)
  hit = jnp.zeros(scores.shape, bool)
  for i in range(items.shape[1]):
    hit = hit | (col[None] == items[:, i : i + 1])
  low = -jnp.inf if jnp.issubdtype(scores.dtype, jnp.floating) else MASKED_KEY
  return jnp.where(hit, jnp.asarray(low, scores.dtype), scores)


def discounted_cumsum(gains: jax.Array) -> jax.Array:
  """``DCG@K = sum_{i<=K} g_i / log2(1 + i)`` for every ``K <= k``: ``(B, k)``.

  ``gains`` is ``(B, k)``, already in rank order (``dcg.gain`` of the retrieved
  or ideal relevances); the discount is :func:`jitr.losses.dcg.discount`, the
  one the Smooth-NDCG loss uses.
  """
  chex.assert_rank(gains, 2)
  positions = jnp.arange(1, gains.shape[1] + 1, dtype=jnp.float32)
  return jnp.cumsum(gains * dcg.discount(positions)[None], axis=1)
