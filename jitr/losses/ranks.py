"""Exact and approximate (sigmoid-smoothed) 1-based ranks of one list.

``approx_ranks`` has a custom VJP so that its backward pass is one fused
O(M²) reduction per list and stores only the scores, never the ``[M, M]``
pairwise matrix; ``approx_ranks_of`` ranks only some items of the list (O(K·M) for K of
them), with the same kind of backward pass.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jitr.losses import checks


def _pairwise_tanh(scores: jax.Array, half_inverse_temperature: jax.Array) -> jax.Array:
  """``t[i, j] = tanh((s_j − s_i)/(2τ))``, so ``σ((s_j − s_i)/τ) = (1 + t)/2``.

  XLA's vectorised tanh is several times faster than its logistic on CPU, and
  ``σ' = (1 − t²)/4`` then costs one multiply-add.
  """
  return jnp.tanh((scores[None, :] - scores[:, None]) * half_inverse_temperature)


@jax.custom_vjp
def _approx_ranks(
  scores: jax.Array, weights: jax.Array, half_inverse_temperature: jax.Array
) -> jax.Array:
  # Σ_{j≠i} w_j σ(d_ij) = Σ_j w_j (1 + t_ij)/2 − σ(0) for a valid i (t_ii = 0).
  t = _pairwise_tanh(scores, half_inverse_temperature)
  total = 0.5 * jnp.sum(weights) + 0.5 * jnp.sum(weights[None, :] * t, axis=-1)
  return 1.0 + weights * (total - 0.5)


def _approx_ranks_fwd(scores, weights, half_inverse_temperature):
  out = _approx_ranks(scores, weights, half_inverse_temperature)
  return out, (scores, weights, half_inverse_temperature)


def _approx_ranks_bwd(residuals, cotangent):
  """``∂L/∂s_m = w_m Σ_j w_j σ'_τ(s_j − s_m)(g_j − g_m)``: one fused reduction.

  ``σ'_τ(x) = σ'(x/τ)/τ = (1 − tanh²(x/2τ))/(4τ)`` is even, so ``∂π_j/∂s_m =
  w_j w_m σ'_τ(s_m − s_j)`` for ``m ≠ j`` and ``∂π_m/∂s_m = −w_m Σ_{j≠m} w_j
  σ'_τ(s_j − s_m)``; summed against the upstream ``g = ∂L/∂π`` this is the
  single reduction above (the ``j = m`` term vanishes). The temperature gets no
  gradient (callers pass it through ``stop_gradient``).
  """
  scores, weights, half_inverse_temperature = residuals
  t = _pairwise_tanh(scores, half_inverse_temperature)
  g = cotangent
  grad = jnp.sum((1.0 - t * t) * weights[None, :] * (g[None, :] - g[:, None]), axis=-1)
  grad = weights * grad * (0.5 * half_inverse_temperature)
  return grad.astype(scores.dtype), None, jnp.zeros_like(half_inverse_temperature)


_approx_ranks.defvjp(_approx_ranks_fwd, _approx_ranks_bwd)


def approx_ranks(
  scores: jax.Array,
  *,
  temperature: float | jax.Array = 0.01,
  where: jax.Array | None = None,
) -> jax.Array:
  """Smooth 1-based ranks of one list (Listwise ITR eq. 14; rax's ``approx_ranks``).

  ``π̂_i = 1 + Σ_{j≠i, j valid} σ((s_j − s_i)/τ)`` for valid ``i``; invalid items
  get rank 1 and do not count in the others' ranks. As ``τ → 0`` this tends to
  the exact rank (ties counting one half each).

  Args:
    scores: ``[M]`` scores of one list (vmap for more).
    temperature: τ > 0; not differentiated.
    where: optional bool ``[M]`` validity mask.

  Returns:
    ``[M]`` approximate ranks.

  >>> import jax.numpy as jnp
  >>> approx_ranks(jnp.array([0.3, 0.9, 0.1]), temperature=1e-3).tolist()
  [2.0, 1.0, 3.0]
  """
  checks.check_positive("temperature", temperature)
  chex.assert_rank(scores, 1)
  if where is None:
    where = jnp.ones(scores.shape, dtype=bool)
  chex.assert_equal_shape([scores, where])
  half_inverse_temperature = jax.lax.stop_gradient(0.5 / jnp.asarray(temperature, scores.dtype))
  return _approx_ranks(scores, where.astype(scores.dtype), half_inverse_temperature)


@jax.custom_vjp
def _ranks_of(
  chosen: jax.Array,
  chosen_weights: jax.Array,
  scores: jax.Array,
  weights: jax.Array,
  half_inverse_temperature: jax.Array,
) -> jax.Array:
  # Σ_{k≠m} w_k σ(s_k − c_m) = Σ_k w_k (1 + t_mk)/2 − σ(0): the chosen item is in the list.
  t = jnp.tanh((scores[None, :] - chosen[:, None]) * half_inverse_temperature)
  total = 0.5 * jnp.sum(weights) + 0.5 * jnp.sum(weights[None, :] * t, axis=-1)
  return 1.0 + chosen_weights * (total - 0.5)


def _ranks_of_fwd(chosen, chosen_weights, scores, weights, half_inverse_temperature):
  out = _ranks_of(chosen, chosen_weights, scores, weights, half_inverse_temperature)
  return out, (chosen, chosen_weights, scores, weights, half_inverse_temperature)


def _ranks_of_bwd(residuals, cotangent):
  """``∂π_m/∂s_k = v_m w_k σ'_τ(s_k − c_m)`` and ``∂π_m/∂c_m = −v_m Σ_k w_k σ'_τ(s_k −
  c_m)`` (``v``: the chosen items' weights, ``σ'_τ = (1 − t²)/(4τ)``): two reductions of one
  ``[K, M]`` matrix against the upstream ``g = ∂L/∂π``. A chosen item is also one of the
  scores: its ``c_m`` and ``s_k`` gradients add up where it was gathered from (the
  ``k = m`` terms cancel)."""
  chosen, chosen_weights, scores, weights, half_inverse_temperature = residuals
  t = jnp.tanh((scores[None, :] - chosen[:, None]) * half_inverse_temperature)
  slope = (1.0 - t * t) * (0.5 * half_inverse_temperature)
  g = cotangent * chosen_weights
  grad_scores = weights * (g @ slope)
  grad_chosen = -g * (slope @ weights)
  zero = jnp.zeros_like(half_inverse_temperature)
  return grad_chosen.astype(chosen.dtype), None, grad_scores.astype(scores.dtype), None, zero


_ranks_of.defvjp(_ranks_of_fwd, _ranks_of_bwd)


def approx_ranks_of(
  chosen: jax.Array,
  scores: jax.Array,
  *,
  temperature: float | jax.Array = 0.01,
  where: jax.Array | None = None,
  chosen_where: jax.Array | None = None,
) -> jax.Array:
  """The smooth 1-based ranks of ``K`` chosen items of one list among all its ``M`` items.

  ``π̂_m = 1 + Σ_{k valid, k ≠ m} σ((s_k − c_m)/τ)``, ``c_m`` the chosen item's score: the
  ranks :func:`approx_ranks` gives those items (each chosen item is one of ``scores``,
  ``c = scores[index]``), at ``K·M`` pairs instead of ``M²``. A chosen item that is not
  valid (``chosen_where``) gets rank 1.

  Args:
    chosen: ``[K]`` scores of the chosen items (gathered from ``scores``).
    scores: ``[M]`` scores of the whole list.
    temperature: τ > 0; not differentiated.
    where: optional bool ``[M]`` validity mask of the list.
    chosen_where: optional bool ``[K]``: which chosen items are valid items of the list.

  >>> import jax.numpy as jnp
  >>> approx_ranks_of(jnp.array([0.1, 0.9]), jnp.array([0.3, 0.9, 0.1]), temperature=1e-3).tolist()
  [3.0, 1.0]
  """
  checks.check_positive("temperature", temperature)
  chex.assert_rank([chosen, scores], 1)
  where = jnp.ones(scores.shape, bool) if where is None else where
  chosen_where = jnp.ones(chosen.shape, bool) if chosen_where is None else chosen_where
  chex.assert_equal_shape([scores, where])
  chex.assert_equal_shape([chosen, chosen_where])
  half_inverse_temperature = jax.lax.stop_gradient(0.5 / jnp.asarray(temperature, scores.dtype))
  dtype = scores.dtype
  return _ranks_of(
    chosen, chosen_where.astype(dtype), scores, where.astype(dtype), half_inverse_temperature
  )


def exact_ranks(scores: jax.Array, *, where: jax.Array | None = None) -> jax.Array:
  """Exact 1-based ranks of one list by descending score (invalid items last).

  Ties are broken by position (stable sort), as ``rax.utils.ranks`` does.

  >>> import jax.numpy as jnp
  >>> exact_ranks(jnp.array([0.3, 0.9, 0.3])).tolist()
  [2, 1, 3]
  """
  chex.assert_rank(scores, 1)
  keys = -scores if where is None else jnp.where(where, -scores, jnp.inf)
  order = jnp.argsort(keys, stable=True)
  return (
    jnp.zeros(scores.shape, jnp.int32)
    .at[order]
    .set(jnp.arange(1, scores.shape[0] + 1, dtype=jnp.int32))
  )
