"""The adaptive listwise loss of CMAL²R (Qu et al., cross-modal learning to rank with an
adaptive listwise constraint, eq. 6–12): a top-one listwise loss with rank-adaptive margins."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jitr.losses import checks
from jitr.losses import query_rows as qr


def rank_adaptive_margins(scores: jax.Array, negatives: jax.Array) -> jax.Array:
  """``m_k = 3/4 − (rank_k − 2)/(2(n − 2))`` for the negatives of one list.

  ``rank_k ∈ {2, …, n}`` is the position of negative k in the current
  descending order of the negatives (the positive holds rank 1, so the hardest
  negative gets 3/4 and the easiest 1/4; ``n − 1`` negatives). No gradient flows
  through the order. A single negative gets 3/4. Non-negatives get 0.
  """
  keys = jax.lax.stop_gradient(jnp.where(negatives, -scores, jnp.inf))
  order = jnp.argsort(keys, stable=True)
  position = (
    jnp.zeros(scores.shape, scores.dtype)
    .at[order]
    .set(jnp.arange(scores.shape[-1], dtype=scores.dtype))
  )  # 0 = hardest negative
  n_neg = jnp.sum(negatives).astype(scores.dtype)
  span = jnp.maximum(2.0 * (n_neg - 1.0), 1.0)
  return jnp.where(negatives, 0.75 - position / span, 0.0)


def _masked_logsumexp(values: jax.Array, mask: jax.Array) -> jax.Array:
  """``log Σ_{mask} exp(v)`` (−inf for an empty mask) with finite gradients."""
  peak = jax.lax.stop_gradient(jnp.max(jnp.where(mask, values, -jnp.inf), initial=-jnp.inf))
  peak = jnp.where(jnp.isfinite(peak), peak, 0.0)
  total = jnp.sum(jnp.where(mask, jnp.exp(jnp.where(mask, values, peak) - peak), 0.0))
  any_valid = jnp.any(mask)
  return jnp.where(any_valid, jnp.log(jnp.where(any_valid, total, 1.0)) + peak, -jnp.inf)


def adaptive_listwise_query(
  query: qr.Query, *, sharpness: float = 0.5, alpha: float = 0.4
) -> tuple[jax.Array, jax.Array]:
  """One query's ``mean_p log(1 + Σ_k exp((s_k − s_p + m_k)/β))`` over its valid positives
  p and valid negatives k, and whether it counts (it has a valid positive).

  ``m_k`` are the rank-adaptive margins (:func:`rank_adaptive_margins`), ``β`` the
  sharpness. Computed as ``softplus(A − s_p/β)`` with ``A = logsumexp_k((s_k + m_k)/β)``,
  so one row costs O(M log M). ``alpha`` weighs the directions, not the query:
  ``α·L_i2t + (1 − α)·L_t2i``.
  """
  del alpha  # the direction weights (ADAPTIVE_LISTWISE.direction_weights)
  scores, positives, where = query.sim, query.positives, query.where
  pos = positives & where
  neg = where & ~positives
  margins = rank_adaptive_margins(scores, neg)
  lse = _masked_logsumexp((scores + margins) / sharpness, neg)
  per_positive = jnp.logaddexp(0.0, lse - scores / sharpness)
  n_pos = jnp.sum(pos)
  return jnp.sum(jnp.where(pos, per_positive, 0.0)) / jnp.maximum(n_pos, 1), n_pos > 0


#: The CMAL²R loss, written once as :func:`adaptive_listwise_query`; image->text weighs
#: α, text->image 1 − α.
ADAPTIVE_LISTWISE = qr.QueryLoss(
  adaptive_listwise_query,
  ranges={"sharpness": checks.POSITIVE, "alpha": checks.UNIT_INTERVAL},
  direction_weights=lambda hyper: (hyper["alpha"], 1.0 - hyper["alpha"]),
)

#: The core of :func:`adaptive_listwise` on a block of query rows, already weighted by
#: its direction (α for image->text, 1 − α for text->image; ``key`` unused).
adaptive_listwise_queries = ADAPTIVE_LISTWISE.per_query

adaptive_listwise = ADAPTIVE_LISTWISE.function(
  """CMAL²R adaptive listwise loss, ``α·L_i2t + (1 − α)·L_t2i``.

  For a query with positive p and valid negatives k:
  ``l = log(1 + Σ_k exp((s_k − s_p + m_k)/β))`` with rank-adaptive margins
  ``m_k = 3/4 − (rank_k − 2)/(2(n − 2)) ∈ [1/4, 3/4]`` (see
  :func:`rank_adaptive_margins`); several positives are averaged.

  Args:
    sim: ``[N_img, N_txt]`` similarities.
    positives: bool annotated pairs (default: identity).
    where: bool mask of valid pairs, broadcastable to ``sim``.
    sharpness: β (0.5).
    alpha: weight α of image->text; text->image gets ``1 − α`` (0.4).
    reduction: ``"mean"``, ``"sum"`` or ``"none"`` (unweighted per-query values).

  >>> import jax.numpy as jnp
  >>> sim = jnp.array([[0.5, 0.0], [0.0, 0.5]])
  >>> round(float(adaptive_listwise(sim)), 5)  # log(1 + exp((0 − .5 + .75)/.5))
  0.97408
  """
)
