"""The one model interface through the one train step: VSE, SGR, SAF, VSRN, CVSE, VSE∞ and
the two-branch network (whose batch's pairs sharing a class are positives).

Every network trains on 8 devices exactly as on one (loss, metrics, gradients and
the running BatchNorm statistics), the pairwise path scores the global batch once,
and auxiliary losses add to the objective with their weights.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import PartitionSpec as P

from jitr import losses, training
from jitr.models import MODELS, make_model
from jitr.models.vsrn import caption_targets
from jitr.training import row_exchange
from tests.training import model_zoo, tiny

# The split of every loss is tested in test_split.py; here the models' side matters.
TRIPLET = losses.objective({"triplet": {"mining": "max"}})
# Smaller programs, same code paths: SGR runs one reasoning step (each step is the same
# module) and VSRN one synced GCN layer (each layer's BatchNorm is the same module); the
# zoo's SGR / SAF already cut caption blocks to 2 lengths (still a per-device
# ``lax.switch``; the cut is exact, its buckets are tests/models' concern).
SMALL = {
  "sgr": dict(sgr_step=1),
  "vsrn": dict(gcn_layers=1),
}


def _model(name, **overrides):
  return model_zoo.model(name, **{**SMALL.get(name, {}), **overrides})


def _state(model, batch, tx=None):
  variables = model_zoo.perturbed(jax.jit(model.init)(jax.random.key(0), batch))
  return training.create_train_state(variables, tx or optax.sgd(1.0), jax.random.key(1))


def _close(got, want, what):
  for (path, w), g in zip(jax.tree_util.tree_leaves_with_path(want), jax.tree.leaves(got)):
    np.testing.assert_allclose(
      np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5, err_msg=f"{what} {path}"
    )


@pytest.mark.slow  # a step of every network compiled for one device and for eight
@pytest.mark.parametrize("name", sorted(model_zoo.CONFIGS))
def test_eight_devices_equal_one_device_for_every_network(name):
  """shard_map over 8 devices (one pair each) = the 1-device step, the networks with
  cross-device statistics (SAF's gathered moments, VSRN's, CVSE's and VSE∞'s sync
  BatchNorm) included; pmap too for VSRN (its statistics go through the same axis-name
  collectives in both backends); pmap = shard_map for every loss is test_split.py's."""
  model = _model(name)
  batch = model_zoo.batch(name)
  batch["valid"][-2:] = False  # padded pairs (on the last two devices) count in no loss
  state = _state(model, batch)
  make = lambda **kw: training.make_train_step(TRIPLET, model=model, **kw)  # noqa: E731
  ref_state, ref_metrics = jax.jit(make(axis_name=None))(state, batch)
  assert np.isfinite(float(ref_metrics["loss"]))  # numpy: no op-by-op compile
  if name in ("sgr", "saf", "vsrn", "cvse", "vseinf"):  # the step moved the running statistics
    moved = jax.tree.map(
      lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b)))),
      ref_state.model_state,
      state.model_state,
    )
    assert max(jax.tree.leaves(moved)) > 1e-4
  if name == "vsrn":
    _check_caption_term(model, state, batch, ref_metrics)
  for backend in ("shard_map", "pmap") if name == "vsrn" else ("shard_map",):
    dp = training.DataParallel(make(), backend=backend, donate=False)
    new_state, metrics = dp(dp.put_state(state), dp.put_batch(batch))
    new_state = dp.get_state(new_state)
    assert set(metrics) == set(ref_metrics)
    for key, want in ref_metrics.items():
      assert float(metrics[key]) == pytest.approx(float(want), rel=1e-6, abs=1e-5), (backend, key)
    _close(new_state.params, ref_state.params, f"{backend} params (SGD lr 1: the gradient)")
    _close(new_state.model_state, ref_state.model_state, f"{backend} model_state")


def test_pairwise_rows_are_the_global_sim_scored_once():
  """Each device's i2t / t2i rows of an SGR model, gathered, are ``score`` of the whole
  batch (and its transpose); the device scores all images against its captions only."""
  model = _model("sgr")
  batch = model_zoo.region_batch(seed=4)
  variables = model_zoo.perturbed(jax.jit(model.init)(jax.random.key(0), batch))

  def one_device(v, b):  # one program: the forward, its ``score`` and the unsplit rows
    out = model.forward(v, b, train=False)[0]
    want = model.score(v, out.images, out.captions, train=False)[0]
    rows = row_exchange.query_rows(
      model, v, out.images, out.captions, train=False, rngs=None, axis_name=None
    )[:2]
    return out, want, rows

  out, want, (i2t_one, t2i_one) = jax.jit(one_device)(variables, batch)
  assert want.shape == (8, 8)
  mesh = jax.make_mesh((8,), ("batch",), devices=jax.devices())

  def rows(variables, images, captions):
    i2t, t2i, _ = row_exchange.query_rows(
      model, variables, images, captions, train=False, rngs=None, axis_name="batch"
    )
    return i2t, t2i

  split = P("batch")
  fn = jax.jit(
    jax.shard_map(
      rows, mesh=mesh, in_specs=(P(), split, split), out_specs=(split, split), check_vma=True
    )
  )
  put = lambda x: jax.device_put(x, jax.NamedSharding(mesh, split))  # noqa: E731
  i2t, t2i = fn(variables, jax.tree.map(put, out.images), jax.tree.map(put, out.captions))
  np.testing.assert_allclose(np.asarray(i2t), np.asarray(want), atol=1e-6)
  np.testing.assert_allclose(np.asarray(t2i), np.asarray(want).T, atol=1e-6)
  np.testing.assert_allclose(np.asarray(i2t_one), np.asarray(want), atol=1e-6)
  np.testing.assert_allclose(np.asarray(t2i_one), np.asarray(want).T, atol=1e-6)


def _check_caption_term(model, state, batch, metrics):
  """loss = triplet + w · mean_b(−ll_b), with ll_b the decoder's
  log-likelihood of the pair's caption (official targets: one padding 0 after <end>)."""
  weight = model_zoo.CONFIGS["vsrn"]["caption_weight"]
  assert model.aux_weights == {"caption": weight}
  module = model.module

  def log_likelihood(variables, images, mask, tokens, lengths):
    regions, region_mask = module.apply(
      variables, images, mask, True, method="encode_image", mutable=["batch_stats"]
    )[0][1:]
    targets = caption_targets(tokens, lengths)
    return module.apply(variables, regions, region_mask, *targets, method="caption_log_likelihood")

  ll = jax.jit(log_likelihood)(
    state.variables, batch["images"], batch["image_mask"], batch["tokens"], batch["lengths"]
  )
  want_caption = -float(np.mean(np.asarray(ll)[:6]))
  assert float(metrics["loss/caption"]) == pytest.approx(want_caption, rel=1e-5)
  objective = float(metrics["loss/triplet"])
  assert float(metrics["loss"]) == pytest.approx(objective + weight * want_caption, rel=1e-5)


def test_vsrn_caption_weight_zero_skips_the_branch():
  """Weight 0: no captioner parameters, no ``loss/caption``, loss = the objective, and
  the same step as with a positive weight whose caption gradient is taken away."""
  batch = model_zoo.region_batch(seed=6)
  off = _model("vsrn", caption_weight=0.0)
  on = _model("vsrn", caption_weight=1.0)
  assert off.aux_weights == {}
  # Shapes only for the captioning model (no compile); values for the towers alone.
  assert "caption_model" in jax.eval_shape(on.init, jax.random.key(0), batch)["params"]
  tower = jax.jit(off.init)(jax.random.key(0), batch)
  assert set(tower["params"]) == {"img_enc", "txt_enc"}
  state = training.create_train_state(tower, optax.sgd(1.0), jax.random.key(1))
  step = training.make_train_step(tiny.LOSS_FN, model=off, graded_fn=tiny.graded_fn, axis_name=None)
  new, metrics = jax.jit(step)(state, batch)
  assert "loss/caption" not in metrics
  parts = float(metrics["loss/triplet"]) + float(metrics["loss/smooth_ndcg"])
  assert float(metrics["loss"]) == pytest.approx(parts, rel=1e-6)
  # The same towers trained by hand on the objective alone (no caption term).
  positives, where = training.in_batch_targets(batch)
  graded = tiny.graded_fn(batch, batch, positives)
  loss_key = jax.random.split(state.rng, 3)[1]

  def objective(params):
    out, _ = off.forward({**tower, "params": params}, batch, train=True, rngs={})
    sim = out.images @ out.captions.T
    return tiny.LOSS_FN(sim, positives=positives, where=where, graded=graded, key=loss_key, step=0)[
      0
    ]

  grads = jax.jit(jax.grad(objective))(tower["params"])
  _close(new.params, jax.tree.map(lambda p, g: p - g, tower["params"], grads), "weight-0 step")


def test_caption_targets_append_the_official_padding_target():
  tokens = jnp.array([[1, 5, 2, 0], [1, 2, 0, 0]])
  padded, lengths = caption_targets(tokens, jnp.array([3, 2]))
  np.testing.assert_array_equal(padded, [[1, 5, 2, 0, 0], [1, 2, 0, 0, 0]])
  np.testing.assert_array_equal(lengths, [4, 3])


def test_objective_term_named_like_an_aux_loss_is_refused():
  clash = losses.objective({"caption": {"loss": "triplet"}})
  with pytest.raises(ValueError, match=r"objective terms \['caption'\].*auxiliary"):
    training.make_train_step(clash, model=model_zoo.model("vsrn"))


def test_registry_names_and_errors():
  assert set(MODELS) == {"vse", "sgr", "saf", "vsrn", "cvse", "vseinf", "twobranch", "clip"}
  assert not make_model({"embed_dim": 8}, 10).pairwise  # no name: "vse"
  assert make_model({"name": "saf", "embed_dim": 8}, 10).module.module == "SAF"
  with pytest.raises(
    ValueError, match=r"config.model.name: expected one of \['clip', 'cvse', 'saf'"
  ):
    make_model({"name": "scan"}, 10)
  with pytest.raises(ValueError, match=r"name='cvse'\): CVSE needs the dataset's concepts"):
    make_model({"name": "cvse"}, 10)
  with pytest.raises(ValueError, match=r"config.model \(name='cvse'\).*fuse_weight"):
    make_model({"name": "cvse", "fuse_weight": 0.5}, 10, {"concepts": model_zoo.concepts()})
  with pytest.raises(ValueError, match=r"config.model \(name='sgr'\).*pooling"):
    make_model({"name": "sgr", "pooling": "max"}, 10)


def test_checkpoint_round_trip_keeps_the_model_state(tmp_path):
  from jitr.training.checkpoints import Checkpoints

  model = model_zoo.model("saf")
  state = _state(model, model_zoo.region_batch(), optax.adam(1e-3))
  moved = state.replace(
    step=state.step + 3, model_state=jax.tree.map(lambda x: x + 1.5, state.model_state)
  )
  checkpoints = Checkpoints(str(tmp_path))
  checkpoints.save_latest(moved)
  restored = checkpoints.restore(state)
  checkpoints.close()
  assert int(restored.step) == 3
  assert jax.tree.structure(restored.model_state) == jax.tree.structure(state.model_state)
  assert set(restored.model_state["batch_stats"]["sim_enc"]) == {"v_global_w", "SAF_module"}
  _close(restored.model_state, moved.model_state, "restored model_state")
  _close(restored.params, moved.params, "restored params")
