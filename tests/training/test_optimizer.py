"""The optimizer registry: names -> optax transformations, clipping, the unknown-name error."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from configs import default
from jitr import training
from jitr.training.optimizer import OPTIMIZERS

# a whole optimizer group as configs/default.py writes it: Adam, no clipping, no decay
GROUP = {
  **default.get_config().optimizer.to_dict(),
  "name": "adam",
  "learning_rate": 0.1,
  "grad_clip": 0.0,
  "decay_epochs": (),
  "weight_decay": 1e-4,
}


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


def _open_clip_cosine_lr(base_lr, warmup_length, steps, step):
  """open_clip's ``scheduler.cosine_lr`` (src/open_clip_train/scheduler.py), transcribed."""
  if step < warmup_length:
    return base_lr * (step + 1) / warmup_length
  e = step - warmup_length
  es = steps - warmup_length
  return 0.5 * (1 + np.cos(np.pi * e / es)) * base_lr


def test_the_cosine_schedule_is_open_clips_warmup_then_cosine():
  schedule = training.optimizer.cosine_schedule(learning_rate=0.5, warmup_steps=4, total_steps=20)
  for step in range(20):
    want = _open_clip_cosine_lr(0.5, 4, 20, step)
    np.testing.assert_allclose(float(schedule(step)), want, rtol=1e-6, atol=1e-8)
  config = _group(name="adamw", schedule="cosine", warmup_steps=4, learning_rate=0.5)
  tx = training.make_optimizer(config, steps_per_epoch=5, total_steps=20)
  params = {"w": jnp.ones(3)}
  state = tx.init(params)
  for step in range(3):  # AdamW's first steps move by -lr(t)·(1 + wd·p) with a constant gradient
    updates, state = tx.update({"w": jnp.full(3, 1.0)}, state, params)
    want = -_open_clip_cosine_lr(0.5, 4, 20, step) * (1 + 1e-4)
    np.testing.assert_allclose(np.asarray(updates["w"]), want, rtol=1e-4)


def test_adamw_on_matrices_only_leaves_vectors_and_scalars_undecayed():
  config = _group(name="adamw", weight_decay=0.5, decay_matrices_only=True, b2=0.98, eps=1e-6)
  tx = training.make_optimizer(config, steps_per_epoch=10)
  params = {"kernel": jnp.ones((2, 2)), "bias": jnp.ones(2), "logit_scale": jnp.ones(())}
  zeros = {k: jnp.zeros_like(v) for k, v in params.items()}
  updates, _ = tx.update(zeros, tx.init(params), params)
  np.testing.assert_allclose(np.asarray(updates["kernel"]), -0.1 * 0.5, rtol=1e-6)
  assert float(jnp.abs(updates["bias"]).max()) == 0 and float(updates["logit_scale"]) == 0
  want = optax.adamw(0.1, b1=0.9, b2=0.98, eps=1e-6, weight_decay=0.5)
  grads = {"kernel": jnp.full((2, 2), 0.3)}
  kernel = {"kernel": params["kernel"]}
  expected, _ = want.update(grads, want.init(kernel), kernel)
  got, _ = tx.update({**zeros, **grads}, tx.init(params), params)
  np.testing.assert_allclose(np.asarray(got["kernel"]), np.asarray(expected["kernel"]), rtol=1e-6)


def test_frozen_modules_never_move_and_stay_out_of_the_clipped_norm():
  config = _group(learning_rate=0.1, grad_clip=1.0, frozen_modules=("visual",))
  tx = training.make_optimizer(config, steps_per_epoch=10)
  params = {"visual": {"w": jnp.ones(2)}, "text": {"w": jnp.ones(2)}}
  grads = {"visual": {"w": jnp.full(2, 100.0)}, "text": {"w": jnp.full(2, 0.1)}}
  updates, _ = tx.update(grads, tx.init(params), params)
  assert float(jnp.abs(updates["visual"]["w"]).max()) == 0
  # the text gradient (norm 0.14 < 1) is not clipped by the frozen tower's: Adam's -lr·sign
  np.testing.assert_allclose(np.asarray(updates["text"]["w"]), -0.1, rtol=1e-5)


def test_layer_decay_scales_each_step_by_decay_to_the_layers_below_the_output():
  """BEiT / timm's layer-wise rates on a CLIP of two blocks per tower: the stem learns at
  d³, block 0 at d², block 1 and the final norm at d, the projection and logit scale at 1;
  the whole AdamW step (decoupled decay included) is scaled, a locked tower stays still."""
  from jitr.models.clip import ClipModel, clip_config
  from jitr.models.clip.layer_ranks import layer_ranks
  from tests.data.karpathy_folder import TINY_TOWER

  model = ClipModel(clip_config(TINY_TOWER, name="tiny"))
  shapes = jax.eval_shape(
    lambda: model.init(jax.random.key(0), jnp.zeros((1, 32, 32, 3)), jnp.zeros((1, 16), int))
  )["params"]
  params = jax.tree.map(lambda s: jnp.ones(s.shape), shapes)
  ranks = layer_ranks(params)
  visual, text = ranks["visual"], ranks["text"]
  assert visual["patch_embed"]["kernel"] == 3 and visual["class_embedding"] == 3
  assert visual["ln_pre"]["scale"] == 3 and text["token_embedding"]["embedding"] == 3
  assert {b: set(jax.tree.leaves(v)) for b, v in visual["transformer"].items()} == {
    "block_0": {2},
    "block_1": {1},
  }
  assert visual["ln_post"]["bias"] == 1 and text["ln_final"]["scale"] == 1
  assert visual["projection"]["kernel"] == 0 and text["projection"]["kernel"] == 0
  assert ranks["logit_scale"] == 0
  config = _group(name="adamw", learning_rate=0.1, weight_decay=0.5, layer_decay=0.5)
  tx = training.make_optimizer(config, steps_per_epoch=10, layer_ranks=layer_ranks)
  grads = jax.tree.map(jnp.ones_like, params)
  updates, _ = tx.update(grads, tx.init(params), params)
  # AdamW's first step with g = p = 1: -lr · (1 + wd) · d^r
  want = jax.tree.map(lambda r: -0.1 * 1.5 * 0.5**r, ranks)
  for got, expected in zip(jax.tree.leaves(updates), jax.tree.leaves(want), strict=True):
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5)
  locked = _group(learning_rate=0.1, layer_decay=0.5, frozen_modules=("visual",))
  tx = training.make_optimizer(locked, steps_per_epoch=10, layer_ranks=layer_ranks)
  updates, _ = tx.update(grads, tx.init(params), params)
  assert not any(float(jnp.abs(u).max()) for u in jax.tree.leaves(updates["visual"]))
  np.testing.assert_allclose(np.asarray(updates["text"]["pos_embed"]), -0.1 * 0.5**3, rtol=1e-5)


def test_layer_decay_needs_a_network_of_layers_and_a_factor_in_0_1():
  from jitr.training.optimizer_config import check_optimizer_config

  with pytest.raises(ValueError, match=r"layer_decay=0.75: the network declares no layers"):
    training.make_optimizer(_group(layer_decay=0.75), steps_per_epoch=10)
  for bad in (0.0, 1.5):
    with pytest.raises(ValueError, match=r"^config.optimizer.layer_decay: expected a"):
      check_optimizer_config(_group(layer_decay=bad))
