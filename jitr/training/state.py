"""The train state: parameters, optimizer state, step and a PRNG key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.struct
import jax
import optax


class TrainState(flax.struct.PyTreeNode):
  """Everything a step changes; a pytree, so it checkpoints and shards as one."""

  step: jax.Array
  params: Any
  opt_state: Any
  rng: jax.Array
  apply_fn: Callable[..., Any] = flax.struct.field(pytree_node=False)
  tx: optax.GradientTransformation = flax.struct.field(pytree_node=False)

  def apply_gradients(self, grads: Any) -> TrainState:
    updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
    return self.replace(
      step=self.step + 1, params=optax.apply_updates(self.params, updates), opt_state=opt_state
    )


def create_train_state(
  params: Any, apply_fn: Callable[..., Any], tx: optax.GradientTransformation, rng: jax.Array
) -> TrainState:
  """A fresh state at step 0."""
  import jax.numpy as jnp

  return TrainState(
    step=jnp.zeros((), jnp.int32),
    params=params,
    opt_state=tx.init(params),
    rng=rng,
    apply_fn=apply_fn,
    tx=tx,
  )
