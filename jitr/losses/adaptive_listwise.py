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


def _adaptive_listwise_row(scores, positives, where, sharpness):
  """Mean over valid positives p of ``log(1 + Σ_k exp((s_k − s_p + m_k)/β))``.

  Computed as ``softplus(A − s_p/β)`` with ``A = logsumexp_k((s_k + m_k)/β)``
  over the valid negatives, so one row costs O(M log M).
  """
  pos = positives & where
  neg = where & ~positives
  margins = rank_adaptive_margins(scores, neg)
  lse = _masked_logsumexp((scores + margins) / sharpness, neg)
  per_positive = jnp.logaddexp(0.0, lse - scores / sharpness)
  n_pos = jnp.sum(pos)
  return jnp.sum(jnp.where(pos, per_positive, 0.0)) / jnp.maximum(n_pos, 1), n_pos > 0


def _unweighted_queries(rows: qr.QueryRows, *, key: jax.Array | None = None, sharpness: float):
  """The per-query losses of a block of rows, without the direction weight (``key`` unused)."""
  del key
  checks.check_positive("sharpness", sharpness)
  rows = qr.without_padding(rows)
  row = jax.vmap(_adaptive_listwise_row, in_axes=(0, 0, 0, None))
  loss, weight = row(rows.sim, rows.positives, rows.where, sharpness)
  return checks.propagate_nonfinite(loss, rows.where, rows.sim), weight


def adaptive_listwise_queries(
  rows: qr.QueryRows,
  *,
  key: jax.Array | None = None,
  sharpness: float = 0.5,
  alpha: float = 0.4,
) -> tuple[jax.Array, jax.Array]:
  """The per-query core of :func:`adaptive_listwise`, already weighted by its
  direction (α for image->text, 1 − α for text->image; ``key`` unused)."""
  checks.check_unit_interval("alpha", alpha)
  loss, weight = _unweighted_queries(rows, key=key, sharpness=sharpness)
  scale = alpha if rows.direction == qr.IMAGE_TO_TEXT else 1.0 - alpha
  return scale * loss, weight


def adaptive_listwise(
  sim: jax.Array,
  *,
  positives: jax.Array | None = None,
  where: jax.Array | None = None,
  sharpness: float = 0.5,
  alpha: float = 0.4,
  reduction: qr.Reduction = "mean",
) -> jax.Array | qr.DirectionalLoss:
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
  checks.check_unit_interval("alpha", alpha)
  # Unweighted per-query values; the direction weights apply in the reduction.
  return qr.both_ways(
    _unweighted_queries,
    sim,
    positives=positives,
    where=where,
    reduction=reduction,
    image_to_text_weight=alpha,
    text_to_image_weight=1.0 - alpha,
    sharpness=sharpness,
  )
