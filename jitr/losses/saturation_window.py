"""The smooth ranks of :func:`jitr.losses.approx_ranks`, summed only where the sigmoid is not
saturated: sort once, walk each item's neighbours outwards until they are saturated.

``π̂_i = 1 + Σ_{j≠i} w_j σ((s_j − s_i)/τ)``. A pair more than ``x_C·τ`` apart adds 1
(``s_j`` above) or 0 (below) up to ``e^{−x_C}``: with ``x_C = ln(C·2²⁴)`` the pairs left
out of one rank sum to at most ``C·e^{−x_C} = 2^{−24}``, under half an ulp of a rank ``≥ 1``
in float32. Sorted by descending score, an item's unsaturated partners are a contiguous
run of its neighbours; the items above the run count 1 each, those below 0. So each item
sums ``σ`` over the offsets ``d = 1, 2, …`` on both sides until both neighbours at ``d``
are saturated: ``O(C log C + C·W)`` for a list of ``C``, ``W`` its widest run, instead of
``C²``. The backward pass (``∂L/∂s_m = w_m Σ_j w_j σ'_τ(s_j − s_m)(g_j − g_m)``, ``σ'_τ`` as
negligible outside the run) walks the same offsets. The walk is a ``lax.while_loop``: under
``vmap`` it runs as long as the block's widest run, so a block of rows costs its widest row.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import chex
import jax
import jax.custom_batching
import jax.numpy as jnp

from jitr.losses import checks

#: Offsets walked per loop step on each side.
CHUNK = 16


def saturation(size: int) -> float:
  """``x_C = ln(C·2²⁴)``: the ``|s_j − s_i|/τ`` beyond which a pair counts as exactly 0 or 1."""
  return math.log(size) + 24.0 * math.log(2.0)


def _sorted(scores: jax.Array, weights: jax.Array):
  """``(order, S, V)``: the scores in descending order, the invalid items (weight 0) last."""
  order = jnp.argsort(jnp.where(weights > 0, -scores, jnp.inf), stable=True)
  return order, scores[order], weights[order]


def _walk(
  fields: tuple[jax.Array, ...],
  inverse_temperature: jax.Array,
  pair: Callable[..., jax.Array],
) -> tuple[jax.Array, jax.Array]:
  """``(Σ_d pair(…), D)`` over the rows ``[..., C]`` of sorted ``fields`` (the scores, the
  weights and what else ``pair`` reads): for each position ``p``, ``pair(*neighbours,
  *own)``'s terms of its neighbours ``q = p ∓ d`` (each field shifted by ``∓d``, the own
  fields as they are, all ``[..., C]``) summed over ``d = 1 … D − 1``, walked
  :data:`CHUNK` offsets a step while some valid item of any row has a valid, unsaturated
  neighbour at the next ``d``.
  A neighbour is a slice of the fields padded by ``C + CHUNK`` zeros a side (a padded
  neighbour has weight 0), one offset for every row: no gathers, no copies."""
  scores, weights = fields[0], fields[1]
  size = scores.shape[-1]
  pad = size + CHUNK
  padded = [jnp.pad(f, [(0, 0)] * (f.ndim - 1) + [(pad, pad)]) for f in fields]
  scale = inverse_temperature.reshape(
    inverse_temperature.shape + (1,) * (scores.ndim - inverse_temperature.ndim)
  )
  limit = saturation(size)

  def shifted(field, start, length):
    return jax.lax.dynamic_slice_in_dim(field, start, length, axis=-1)

  def unsaturated(d):
    live = jnp.zeros(scores.shape, bool)
    for start in (pad - d, pad + d):
      gap = jnp.abs(shifted(padded[0], start, size) - scores) * scale
      live = live | ((shifted(padded[1], start, size) > 0) & ~(gap > limit))
    return jnp.any(live & (weights > 0))

  def body(state):
    d, total = state
    step = jnp.zeros_like(total)  # summed apart, then added: two levels of rounding
    for k in range(CHUNK):  # one fused pass over the rows: slices, not copies
      for start in (pad - d - k, pad + d + k):
        neighbours = [shifted(field, start, size) for field in padded]
        step = step + pair(scale, *neighbours, *fields)
    return d + CHUNK, total + step

  start = (jnp.asarray(1), jnp.zeros_like(scores))  # varying as the rows are, in shard_map
  end, total = jax.lax.while_loop(
    lambda state: (state[0] < size) & unsaturated(state[0]), body, start
  )
  return total, end


def _rowwise(kernel: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
  """``kernel`` of ``[..., C]`` rows (and a temperature of their leading shape or a scalar),
  vmapped by calling it on the batched rows themselves: the walk of a block of rows is one
  loop with one offset a step, not a loop per row (which ``vmap`` would make gathers of)."""
  wrapped = jax.custom_batching.custom_vmap(kernel)

  @wrapped.def_vmap
  def _rule(axis_size, in_batched, *args):
    args = [
      a if batched else jnp.broadcast_to(a, (axis_size, *a.shape))
      for a, batched in zip(args, in_batched)
    ]
    return wrapped(*args), True

  return wrapped


def _half_sigmoid_sums(scale, s_q, v_q, s_p, v_p):
  """``w_q (1 + tanh((s_q − s_p)/(2τ)))`` (twice ``w_q σ((s_q − s_p)/τ)``)."""
  del v_p
  return v_q * (1.0 + jnp.tanh((s_q - s_p) * (0.5 * scale)))


def _slope_sums(scale, s_q, v_q, g_q, s_p, v_p, g_p):
  """``w_q (1 − t²)(g_q − g_p)``, ``t = tanh((s_q − s_p)/(2τ))``, ``σ'_τ = (1 − t²)/(4τ)``."""
  del v_p
  t = jnp.tanh((s_q - s_p) * (0.5 * scale))
  return v_q * (1.0 - t * t) * (g_q - g_p)


@_rowwise
def _sorted_ranks(s: jax.Array, v: jax.Array, half_inverse_temperature: jax.Array) -> jax.Array:
  """The ranks of rows sorted by descending score (:func:`_sorted`)."""
  total, end = _walk((s, v), 2.0 * half_inverse_temperature, _half_sigmoid_sums)
  # every valid item more than `end − 1` places above counts 1
  above = jnp.maximum(jnp.arange(s.shape[-1]) - end + 1, 0).astype(s.dtype)
  return 1.0 + v * (0.5 * total + above)


@_rowwise
def _sorted_slopes(
  s: jax.Array, v: jax.Array, g: jax.Array, half_inverse_temperature: jax.Array
) -> jax.Array:
  """``∂L/∂s`` of rows sorted by descending score, ``g = ∂L/∂π̂`` in the same order."""
  total, _ = _walk((s, v, g), 2.0 * half_inverse_temperature, _slope_sums)
  h = half_inverse_temperature.reshape(
    half_inverse_temperature.shape + (1,) * (s.ndim - half_inverse_temperature.ndim)
  )
  return v * total * (0.5 * h)


@jax.custom_vjp
def _window_ranks(
  scores: jax.Array, weights: jax.Array, half_inverse_temperature: jax.Array
) -> jax.Array:
  order, s, v = _sorted(scores, weights)
  ranked = _sorted_ranks(s, v, half_inverse_temperature)
  return jnp.zeros_like(ranked).at[order].set(ranked)


def _window_ranks_fwd(scores, weights, half_inverse_temperature):
  order, s, v = _sorted(scores, weights)
  ranked = _sorted_ranks(s, v, half_inverse_temperature)
  out = jnp.zeros_like(ranked).at[order].set(ranked)
  return out, (order, s, v, half_inverse_temperature)


def _window_ranks_bwd(residuals, cotangent):
  """``∂L/∂s_m = w_m Σ_j w_j σ'_τ(s_j − s_m)(g_j − g_m)`` over ``m``'s unsaturated run
  (:func:`!jitr.losses.ranks.approx_ranks`' backward pass, walked as the forward)."""
  order, s, v, half_inverse_temperature = residuals  # the forward's sort, kept: O(C)
  grad = _sorted_slopes(s, v, cotangent[order], half_inverse_temperature)
  grad = jnp.zeros_like(grad).at[order].set(grad)
  return grad.astype(s.dtype), None, jnp.zeros_like(half_inverse_temperature)


_window_ranks.defvjp(_window_ranks_fwd, _window_ranks_bwd)


def window_ranks(
  scores: jax.Array,
  *,
  temperature: float | jax.Array = 0.01,
  where: jax.Array | None = None,
) -> jax.Array:
  """:func:`jitr.losses.approx_ranks` (``π̂_i = 1 + Σ_{j≠i, j valid} σ((s_j − s_i)/τ)``) by
  sorting and summing each item's unsaturated run of neighbours only (module
  documentation): equal to it within float32 rounding, ``O(C log C + C·W)``.

  Args:
    scores: ``[C]`` scores of one list (vmap for more).
    temperature: τ > 0; not differentiated.
    where: optional bool ``[C]`` validity mask; invalid items get rank 1 and do not count.

  >>> import jax.numpy as jnp
  >>> window_ranks(jnp.array([0.3, 0.9, 0.1]), temperature=1e-3).tolist()
  [2.0, 1.0, 3.0]
  """
  checks.check_positive("temperature", temperature)
  chex.assert_rank(scores, 1)
  where = jnp.ones(scores.shape, bool) if where is None else where
  chex.assert_equal_shape([scores, where])
  half_inverse_temperature = jax.lax.stop_gradient(0.5 / jnp.asarray(temperature, scores.dtype))
  return _window_ranks(scores, where.astype(scores.dtype), half_inverse_temperature)


def unsaturated_partners(
  scores: jax.Array,
  *,
  temperature: float | jax.Array = 0.01,
  where: jax.Array | None = None,
) -> jax.Array:
  """Each valid item's number of valid partners within ``x_C·τ`` of its score (0 for an
  invalid item): the run :func:`window_ranks` sums over; the walk takes half its widest
  on each side, rounded up to :data:`!jitr.losses.saturation_window.CHUNK`.

  >>> import jax.numpy as jnp
  >>> unsaturated_partners(jnp.array([0.0, 0.05, 0.5, 0.52]), temperature=0.01).tolist()
  [1, 1, 1, 1]
  """
  checks.check_positive("temperature", temperature)
  chex.assert_rank(scores, 1)
  where = jnp.ones(scores.shape, bool) if where is None else where
  width = saturation(scores.shape[0]) * jnp.asarray(temperature, scores.dtype)
  ascending = jnp.sort(jnp.where(where, scores, jnp.inf))
  within = jnp.searchsorted(ascending, scores + width, side="right") - jnp.searchsorted(
    ascending, scores - width, side="left"
  )
  return jnp.where(where, within - 1, 0)
