"""PyTorch's default initialisation of ``nn.Linear``, as the official VSE∞ layers start.

``kaiming_uniform_(a=√5)`` on the weight and ``U(−b, b)`` on the bias with
``b = 1 / sqrt(fan_in)`` both; Xavier-uniform ``U(−r, r)``, ``r = sqrt(6 / (fan_in +
fan_out))`` with a zero bias is the image ``fc``'s own ``init_weights``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

#: ``U(−1/sqrt(fan_in), 1/sqrt(fan_in))`` on a ``[fan_in, fan_out]`` kernel.
torch_kernel_init = nn.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform")
#: The image ``fc``'s ``init_weights``: Xavier-uniform.
xavier_kernel_init = nn.initializers.xavier_uniform()


def torch_bias_init(fan_in: int) -> Callable:
  """``U(−1/sqrt(fan_in), 1/sqrt(fan_in))``: PyTorch's ``nn.Linear`` bias."""
  bound = 1.0 / math.sqrt(fan_in)

  def init(key, shape, dtype=jnp.float32):
    return jax.random.uniform(key, shape, dtype, -bound, bound)

  return init


def torch_dense(features: int, fan_in: int, name: str, dtype=jnp.float32) -> nn.Dense:
  """``nn.Dense`` initialised as PyTorch's ``nn.Linear(fan_in, features)``."""
  return nn.Dense(
    features,
    dtype=dtype,
    kernel_init=torch_kernel_init,
    bias_init=torch_bias_init(fan_in),
    name=name,
  )


def torch_gpo_params(key: jax.Array, params: dict, d_hidden: int = 32) -> dict:
  """``params`` (a :class:`~jitr.models.GPO` subtree) redrawn as the official GPO starts:
  PyTorch's ``nn.GRU`` draws every weight and bias from ``U(−k, k)``, ``k = 1/sqrt(d_hidden)``,
  and its score ``nn.Linear(d_hidden, 1, bias=False)`` the same bound (fan-in ``d_hidden``)."""
  bound = 1.0 / math.sqrt(d_hidden)
  leaves, tree = jax.tree.flatten(params)
  keys = jax.random.split(key, len(leaves))
  drawn = [jax.random.uniform(k, x.shape, x.dtype, -bound, bound) for k, x in zip(keys, leaves)]
  return jax.tree.unflatten(tree, drawn)
