"""Exact (D/ID)CG of one list, shared by the exact metric and Smooth-NDCG.

:func:`gain` and :func:`discount` are the only copy of the DCG gain and
discount in jitr: the Smooth-NDCG loss, the exact :func:`ndcg` here and the
NDCG@K of :mod:`jitr.evaluation` all use them, so the metric the losses
optimise and the one the evaluation reports cannot drift apart.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jitr.losses import checks
from jitr.losses import ranks as ranks_lib


def gain(relevance: jax.Array) -> jax.Array:
  """The graded gain ``2^max(r, 0) − 1`` (0 for ``r <= 0``, 1 for ``r = 1``), elementwise.

  Relevance lies in ``[0, ∞)``: a negative value counts as 0 (no gain) rather than as a
  negative gain that would push NDCG below 0 (and a loss ``1 − NDCG`` above 1); it is
  clipped, not refused, as a traced array cannot be checked without a host sync. NaN
  stays NaN.

  >>> import jax.numpy as jnp
  >>> gain(jnp.array([0.0, 1.0, 2.0, -1.0])).tolist()
  [0.0, 1.0, 3.0, 0.0]
  """
  return jnp.exp2(jnp.maximum(relevance, 0.0)) - 1.0


def discount(rank: jax.Array) -> jax.Array:
  """The position discount ``1 / log2(1 + rank)`` for 1-based ranks, elementwise.

  >>> import jax.numpy as jnp
  >>> discount(jnp.array([1.0, 3.0])).tolist()
  [1.0, 0.5]
  """
  return 1.0 / jnp.log2(1.0 + rank)


def ideal_dcg(relevance: jax.Array, *, where: jax.Array, top_k: int | None = None) -> jax.Array:
  """IDCG: gains sorted in descending order at positions 1, 2, … (ties get
  distinct positions, so a perfect ranking scores exactly 1), cut at ``top_k``."""
  gains = jnp.where(where, gain(relevance), 0.0)
  if top_k is not None and top_k < gains.shape[-1]:
    gains = jax.lax.top_k(gains, top_k)[0]  # the k largest, descending: no sort of all
  else:
    gains = jnp.sort(gains)[::-1]
  positions = jnp.arange(1, gains.shape[-1] + 1, dtype=gains.dtype)
  return jnp.sum(gains * discount(positions))


def ndcg_from_ranks(
  ranks: jax.Array,
  relevance: jax.Array,
  *,
  where: jax.Array,
  top_k: int | None = None,
) -> tuple[jax.Array, jax.Array]:
  """``(DCG/IDCG, IDCG > 0)`` of one list given (exact or approximate) ranks.

  ``DCG = Σ_{j valid} (2^{r_j} − 1) / log2(1 + π_j)``; lists with IDCG = 0 (no
  relevant item) return 0 and ``False``.
  """
  gains = jnp.where(where, gain(relevance), 0.0)
  kept = where if top_k is None else where & (ranks <= top_k)
  dcg = jnp.sum(jnp.where(kept, gains * discount(ranks.astype(gains.dtype)), 0.0))
  idcg = ideal_dcg(relevance, where=where, top_k=top_k)
  valid = ~(idcg <= 0)  # a NaN relevance keeps the query (its NDCG is NaN)
  return jnp.where(valid, dcg / jnp.where(valid, idcg, 1.0), 0.0), valid


def ndcg(
  scores: jax.Array,
  relevance: jax.Array,
  *,
  where: jax.Array | None = None,
  top_k: int | None = None,
) -> jax.Array:
  """Exact NDCG(@k) of one list with graded relevance, for logging the real metric.

  ``NDCG = Σ_j (2^{r_j} − 1)/log2(1 + rank_j) / IDCG`` with exact ranks by
  descending score (ties broken by position); 0 when no item is relevant.
  Vmap it for a similarity matrix (``jax.vmap(ndcg)(sim, relevance)``).

  >>> import jax.numpy as jnp
  >>> round(float(ndcg(jnp.array([0.2, 0.9]), jnp.array([1.0, 0.0]))), 4)  # 1/log2(3)
  0.6309
  """
  if top_k is not None:
    checks.check_block_size("top_k", top_k)
  chex.assert_rank(scores, 1)
  chex.assert_equal_shape([scores, relevance])
  where = jnp.ones(scores.shape, bool) if where is None else where.astype(bool)
  ranks = ranks_lib.exact_ranks(scores, where=where)
  value, _ = ndcg_from_ranks(ranks, relevance, where=where, top_k=top_k)
  return value
