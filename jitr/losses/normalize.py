"""L2 normalisation: the one JAX copy, used by the losses and the encoders.

Two conventions exist in the reference code and they are not the same
function, so both live here under names that say which is which:

* :func:`l2_normalize` -- ``x / max(‖x‖₂, eps)`` (``torch.nn.functional.normalize``,
  ``jax``/``optax`` style). Vectors with ``‖x‖ ≥ eps`` come out exactly unit
  norm; a zero vector stays 0 **with a finite (zero) gradient**, because it is
  computed as ``x · rsqrt(max(Σx², eps²))``. VSE++ / VSE∞ / VSRN encoders and
  the RSC relevance use it.
* :func:`l2_normalize_additive` -- ``x / (‖x‖₂ + eps)``, the ``l2norm`` of the
  official SCAN / SGRAF code (``X / (sqrt(Σ X²) + 1e-8)``). Outputs have norm
  ``‖x‖/(‖x‖ + eps) < 1`` -- for ``‖x‖ ≈ 1`` that differs from
  :func:`l2_normalize` by ~``eps`` (1e-8, below float32 resolution), but for
  small vectors (the SGRAF similarity vectors before normalisation can be
  tiny) the two differ, so parity with the official SGRAF code needs this one.
  The norm is taken as ``sqrt(max(Σx², tiny))`` so the gradient at a zero
  vector is finite too (the official ``sqrt`` has an infinite derivative
  there); the value changes by at most ``sqrt(tiny) ≈ 1e-19``.

Both compute in float32 or wider and return that (bf16 inputs are upcast: the
squared norm is where bf16 loses precision; float64 stays float64).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["l2_normalize", "l2_normalize_additive"]


def _sum_of_squares(x: jax.Array, axis: int) -> tuple[jax.Array, jax.Array]:
  x = jnp.asarray(x)
  x = x.astype(jnp.promote_types(x.dtype, jnp.float32))  # bf16/f16 up to f32, f64 stays
  return x, jnp.sum(x * x, axis=axis, keepdims=True)


def l2_normalize(x: jax.Array, *, axis: int = -1, eps: float = 1e-8) -> jax.Array:
  """``x / max(‖x‖₂, eps)`` along ``axis`` in float32 (or wider); a zero vector stays 0.

  >>> import jax.numpy as jnp
  >>> l2_normalize(jnp.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
  [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
  """
  x, sq = _sum_of_squares(x, axis)
  return x * jax.lax.rsqrt(jnp.maximum(sq, jnp.float32(eps) ** 2))


def l2_normalize_additive(x: jax.Array, *, axis: int = -1, eps: float = 1e-8) -> jax.Array:
  """``x / (‖x‖₂ + eps)`` along ``axis`` in float32 or wider (SCAN / SGRAF ``l2norm``).

  >>> import jax.numpy as jnp
  >>> y = l2_normalize_additive(jnp.array([3e-8, 4e-8]))  # ‖x‖ = 5e-8: x / 6e-8
  >>> [round(float(v), 4) for v in y]
  [0.5, 0.6667]
  """
  x, sq = _sum_of_squares(x, axis)
  tiny = jnp.finfo(jnp.float32).tiny
  return x / (jnp.sqrt(jnp.maximum(sq, tiny)) + jnp.float32(eps))
