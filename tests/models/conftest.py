"""Shared helpers for the model tests.

Compilation dominates on 2 CPU cores, so tests draw parameters from the
module's *shapes* (``jax.eval_shape(init)``: traced, never compiled) and run one
``jax.jit``-ed apply per model, instead of op-by-op init and apply.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest


def random_params(module, *args, scale=0.5, seed=0, **kwargs):
  """Params with ``module.init``'s tree and shapes, values ``N(0, scale²)``."""
  shapes = jax.eval_shape(module.init, jax.random.key(0), *args, **kwargs)
  rng = np.random.default_rng(seed)
  return jax.tree.map(
    lambda s: jnp.asarray(rng.normal(0.0, scale, s.shape).astype(s.dtype)), shapes
  )


@pytest.fixture(scope="session")
def make_params():
  return random_params
