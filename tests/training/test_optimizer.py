"""The optimizer registry: names -> optax transformations, clipping, the unknown-name error."""

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jitr import training
from jitr.training.optimizer import OPTIMIZERS

# a whole optimizer group as configs/default.py writes it: Adam, no clipping, no decay
GROUP = dict(
  name="adam",
  learning_rate=0.1,
  grad_clip=0.0,
  decay_epochs=(),
  decay_factor=0.1,
  module_decay_factors={},
  module_lr_factors={},
  weight_decay=1e-4,
)


def _group(**fields):
  return {**GROUP, **fields}


def _one_update(config, grad=1.0):
  tx = training.make_optimizer(config, steps_per_epoch=10)
  params = {"w": jnp.ones(3)}
  updates, _ = tx.update({"w": jnp.full(3, grad)}, tx.init(params), params)
  return np.asarray(updates["w"])


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_registered_optimizer_matches_its_optax_transformation(name):
  config = _group(name=name, learning_rate=0.1, weight_decay=0.5)
  want = {
    "adam": optax.adam(0.1),
    "adamw": optax.adamw(0.1, weight_decay=0.5),
  }[name]
  params = {"w": jnp.ones(3)}
  expected, _ = want.update({"w": jnp.full(3, 1.0)}, want.init(params), params)
  np.testing.assert_allclose(_one_update(config), expected["w"], rtol=1e-6)


def test_adam_steps_by_the_rate_and_a_positive_grad_clip_chains_the_clip():
  # Adam's first step is -lr·sign(g)
  np.testing.assert_allclose(_one_update(_group(learning_rate=0.1)), -0.1, rtol=1e-5)
  clipped = training.make_optimizer(_group(grad_clip=2.0), steps_per_epoch=10)
  assert len(clipped.init({"w": jnp.ones(3)})) == 2  # (clip_by_global_norm, adam)


def test_an_unknown_name_names_the_field_and_the_valid_names():
  with pytest.raises(ValueError) as err:
    training.make_optimizer(_group(name="sgd"), steps_per_epoch=10)
  assert str(err.value) == "optimizer.name: expected one of ['adam', 'adamw'], got 'sgd'"


def test_module_decay_factors_give_those_modules_their_own_decay():
  """CVSE's schedule: the GCN decays by 0.2 at the decay epochs, the rest by 0.1. With a
  constant gradient every Adam update is ``-lr`` exactly (``m̂ / sqrt(v̂) = 1``), so each
  step's update is that group's learning rate."""
  config = _group(
    learning_rate=1.0,
    decay_epochs=(1, 2),
    decay_factor=0.1,
    module_decay_factors={"gcn": 0.2},
  )
  tx = training.make_optimizer(config, steps_per_epoch=1)
  params = {"gcn": {"w": jnp.zeros(2)}, "img_enc": {"w": jnp.zeros(3)}}
  grads = {"gcn": {"w": jnp.ones(2)}, "img_enc": {"w": jnp.ones(3)}}
  state = tx.init(params)
  rates = []
  for _ in range(3):
    updates, state = tx.update(grads, state, params)
    rates.append((float(-updates["gcn"]["w"][0]), float(-updates["img_enc"]["w"][0])))
  np.testing.assert_allclose(rates, [(1.0, 1.0), (0.2, 0.1), (0.04, 0.01)], rtol=1e-4)


def test_module_lr_factors_compose_with_module_decay_factors():
  """A module's learning rate is ``lr · its lr factor · its decay factor^{#decays}``: the
  BERT at 0.1× decaying by 0.1, the GCN at 1× decaying by 0.2, one module at 0.5×
  decaying by 0.2, the rest at 1× decaying by 0.1 (constant gradients: each Adam update
  is ``-lr``)."""
  config = _group(
    learning_rate=1.0,
    decay_epochs=(1,),
    decay_factor=0.1,
    module_decay_factors={"gcn": 0.2, "both": 0.2},
    module_lr_factors={"bert": 0.1, "both": 0.5},
  )
  tx = training.make_optimizer(config, steps_per_epoch=1)
  names = ("bert", "gcn", "both", "rest")
  params = {name: {"w": jnp.zeros(2)} for name in names}
  grads = {name: {"w": jnp.ones(2)} for name in names}
  state = tx.init(params)
  rates = []
  for _ in range(2):
    updates, state = tx.update(grads, state, params)
    rates.append([float(-updates[name]["w"][0]) for name in names])
  want = [[0.1, 1.0, 0.5, 1.0], [0.01, 0.2, 0.1, 0.1]]
  np.testing.assert_allclose(rates, want, rtol=1e-4)
