"""The train state: parameters, non-param model state, optimizer state, step and a PRNG key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import optax


class TrainState(flax.struct.PyTreeNode):
  """Everything a step changes; a pytree, so it checkpoints and shards as one.

  ``model_state`` holds the model's non-param collections (e.g. ``{"batch_stats": ...}``
  running BatchNorm statistics; ``{}`` for the dual encoders), so the model's Flax
  variables are :attr:`variables` ``= {"params": params, **model_state}``.
  """

  step: jax.Array
  params: Any
  model_state: Any
  opt_state: Any
  rng: jax.Array
  tx: optax.GradientTransformation = flax.struct.field(pytree_node=False)

  @property
  def variables(self) -> dict[str, Any]:
    """The model's Flax variables: ``{"params": params, **model_state}``."""
    return {"params": self.params, **self.model_state}

  def apply_gradients(self, grads: Any) -> TrainState:
    updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
    return self.replace(
      step=self.step + 1, params=optax.apply_updates(self.params, updates), opt_state=opt_state
    )


def create_train_state(
  variables: Mapping[str, Any], tx: optax.GradientTransformation, rng: jax.Array
) -> TrainState:
  """A fresh state at step 0 from a model's ``variables`` (``{"params": ..., **others}``:
  the others become ``model_state``)."""
  if "params" not in variables:
    raise ValueError(f"create_train_state: variables need 'params', got {sorted(variables)}")
  params = variables["params"]
  return TrainState(
    step=jnp.zeros((), jnp.int32),
    params=params,
    model_state={k: v for k, v in variables.items() if k != "params"},
    opt_state=tx.init(params),
    rng=rng,
    tx=tx,
  )
