"""Parity of jitr's CVSE self-attention with a transcription of the official PyTorch
classes (BruceW91/CVSE ``model_CVSE.py``: ``V_single_modal_atten``, ``T_single_modal_atten``;
``l2norm`` from ``util/utils.py``), in the configuration CVSE builds (``use_BatchNorm=True``,
``'tanh'``), plus the masked path and float64 finite differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from cvse_reference import T_single_modal_atten, V_single_modal_atten, l2norm
from finite_differences import assert_directional_derivatives_match

from jitr.models.cvse.attention import TextualSelfAttention, VisualSelfAttention

B, R, L, D, E = 3, 5, 6, 8, 8  # batch, regions (= img_region_num), words, feature, embed


# --- helpers ---------------------------------------------------------------------------
def _variables(module, *args, seed=0):
  """``module.init``'s tree (never compiled) with random params and running statistics."""
  shapes = jax.eval_shape(module.init, jax.random.key(0), *args)
  rng = np.random.default_rng(seed)

  def fill(path, s):
    name = jax.tree_util.keystr(path)
    if "'var'" in name:
      return jnp.asarray(rng.uniform(0.5, 1.5, s.shape).astype(s.dtype))
    return jnp.asarray(rng.normal(0.0, 0.5, s.shape).astype(s.dtype))

  return jax.tree_util.tree_map_with_path(fill, shapes)


def _t(x):
  return torch.tensor(np.asarray(x, dtype=np.float32))


def _copy_linear(layer, p):
  layer.weight.data = _t(p["kernel"]).T.contiguous()
  layer.bias.data = _t(p["bias"])


def _copy_bn(bn, p, s):
  bn.weight.data, bn.bias.data = _t(p["scale"]), _t(p["bias"])
  bn.running_mean.data, bn.running_var.data = _t(s["mean"]), _t(s["var"])


def to_torch_visual(variables, dropout, use_bn=True, activation_type="tanh"):
  p, s = variables["params"], variables.get("batch_stats", {})
  ref = V_single_modal_atten(D, E, use_bn, activation_type, dropout, R)
  for name in ("fc1", "fc2", "fc3"):
    _copy_linear(getattr(ref, name), p[name])
  if use_bn:
    _copy_bn(ref.embedding_1[1], p["bn1"], s["bn1"])
    _copy_bn(ref.embedding_2[1], p["bn2"], s["bn2"])
  return ref


def to_torch_textual(variables, dropout):
  p = variables["params"]
  ref = T_single_modal_atten(E, True, "tanh", dropout)
  for name in ("fc1", "fc2", "fc3"):
    _copy_linear(getattr(ref, name), p[name])
  return ref


def _regions(seed=1, b=B, r=R):
  x = np.random.default_rng(seed).normal(size=(b, r, D)).astype(np.float32)
  return x / np.linalg.norm(x, axis=-1, keepdims=True)  # the encoder's l2norm-ed regions


VIS = VisualSelfAttention(embed_dim=E, num_region=R, dropout=0.0)
TXT = TextualSelfAttention(embed_dim=E, dropout=0.0)
vis_apply = jax.jit(VIS.apply, static_argnames=("train", "mutable"))
txt_apply = jax.jit(TXT.apply, static_argnames=("train",))


# --- parity ----------------------------------------------------------------------------
@pytest.mark.parametrize("train", [False, True])
def test_visual_matches_official(train):
  x = _regions()
  variables = _variables(VIS, x)
  ref = to_torch_visual(variables, dropout=0.0).train(train)
  with torch.no_grad():
    xt = _t(x)
    want, want_w = ref(xt, torch.mean(xt, 1))  # m_v: CVSE's img_emb_mean
  if train:
    (got, got_w), new = vis_apply(variables, x, train=True, mutable=("batch_stats",))
    for name, bn in (("bn1", ref.embedding_1[1]), ("bn2", ref.embedding_2[1])):
      np.testing.assert_allclose(new["batch_stats"][name]["mean"], bn.running_mean, atol=1e-5)
      np.testing.assert_allclose(new["batch_stats"][name]["var"], bn.running_var, atol=1e-5)
  else:
    got, got_w = vis_apply(variables, x)
  np.testing.assert_allclose(got, want.numpy(), atol=1e-5)
  np.testing.assert_allclose(got_w, want_w.numpy(), atol=1e-5)


@pytest.mark.parametrize("train", [False, True])
def test_textual_matches_official_on_zero_padded_words(train):
  words = _regions(seed=2, r=L)
  lengths = np.array([6, 4, 2])
  words[np.arange(L)[None, :] >= lengths[:, None]] = 0.0  # pad_packed_sequence's zeros
  variables = _variables(TXT, words)
  ref = to_torch_textual(variables, dropout=0.0).train(train)
  with torch.no_grad():
    ut = _t(words)
    want, want_w = ref(ut, l2norm(torch.mean(ut, 1)))  # m_u: CVSE's cap_emb_mean
  got, got_w = txt_apply(variables, words, train=train)  # unmasked: the official softmax
  np.testing.assert_allclose(got, want.numpy(), atol=1e-5)
  np.testing.assert_allclose(got_w, want_w.numpy(), atol=1e-5)
  # masked: padded words get weight 0; the pooled vector is unchanged (l2norm removes the scale)
  mask = np.arange(L)[None, :] < lengths[:, None]
  got_m, got_mw = txt_apply(variables, words, mask, train=train)
  np.testing.assert_allclose(got_m, want.numpy(), atol=1e-5)
  assert np.all(np.asarray(got_mw)[~mask] == 0.0)
  np.testing.assert_allclose(np.asarray(got_mw).sum(1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("use_bn, act", [(False, "tanh"), (True, "sigmoid"), (False, "sigmoid")])
def test_other_official_visual_branches_match_in_train_mode(use_bn, act):
  x = _regions(seed=8)
  module = VisualSelfAttention(
    embed_dim=E, num_region=R, use_bn=use_bn, activation_type=act, dropout=0.0
  )
  variables = _variables(module, x)
  ref = to_torch_visual(variables, 0.0, use_bn, act).train(True)
  with torch.no_grad():
    xt = _t(x)
    want, want_w = ref(xt, torch.mean(xt, 1))
  (got, got_w), _ = jax.jit(module.apply, static_argnames=("train", "mutable"))(
    variables, x, train=True, mutable=("batch_stats",)
  )
  np.testing.assert_allclose(got, want.numpy(), atol=1e-5)
  np.testing.assert_allclose(got_w, want_w.numpy(), atol=1e-5)


# --- masked path -----------------------------------------------------------------------
def test_padded_regions_and_words_never_change_the_output():
  n = np.array([5, 3, 2])
  mask = np.arange(R)[None, :] < n[:, None]
  x = _regions(seed=3)
  garbage = np.where(mask[..., None], x, 7.0).astype(np.float32)
  variables = _variables(VIS, x)
  got, w = vis_apply(variables, garbage, mask)
  assert np.all(np.asarray(w)[~mask] == 0.0)
  for i in (1, 2):  # eval mode: each padded image alone, unpadded
    alone, alone_w = vis_apply(variables, x[i : i + 1, : n[i]])
    np.testing.assert_allclose(got[i], alone[0], atol=1e-6)
    np.testing.assert_allclose(w[i, : n[i]], alone_w[0], atol=1e-6)
  # train mode: padding values change neither the output nor the running statistics
  a, sa = vis_apply(variables, garbage, mask, train=True, mutable=("batch_stats",))
  b, sb = vis_apply(
    variables, np.where(mask[..., None], x, 0.0), mask, train=True, mutable=("batch_stats",)
  )
  jax.tree.map(lambda u, v: np.testing.assert_allclose(u, v, atol=1e-6), (a, sa), (b, sb))

  lengths = np.array([6, 4, 1])
  wmask = np.arange(L)[None, :] < lengths[:, None]
  words = _regions(seed=4, r=L)
  tv = _variables(TXT, words)
  got, w = txt_apply(tv, np.where(wmask[..., None], words, -3.0), wmask)
  for i in (1, 2):
    alone, alone_w = txt_apply(tv, words[i : i + 1, : lengths[i]])
    np.testing.assert_allclose(got[i], alone[0], atol=1e-6)
    np.testing.assert_allclose(w[i, : lengths[i]], alone_w[0], atol=1e-6)


def test_dropout_is_active_only_in_train_mode_with_an_rng():
  x = _regions(seed=5)
  module = VisualSelfAttention(embed_dim=E, num_region=R)  # CVSE's 0.4
  variables = _variables(module, x)
  apply = jax.jit(module.apply, static_argnames=("train", "mutable"))
  rngs = {"dropout": jax.random.key(1)}
  (a, _), _ = apply(variables, x, train=True, mutable=("batch_stats",), rngs=rngs)
  (b, _), _ = vis_apply(variables, x, train=True, mutable=("batch_stats",))
  assert not np.allclose(a, b)
  np.testing.assert_allclose(apply(variables, x)[0], vis_apply(variables, x)[0], atol=1e-6)


def test_refusals():
  with pytest.raises(ValueError, match="activation_type"):
    VisualSelfAttention(embed_dim=E, num_region=R, activation_type="relu").init(
      jax.random.key(0), _regions()
    )
  with pytest.raises(ValueError, match="at most num_region=5"):
    VIS.init(jax.random.key(0), _regions(r=R + 1))


# --- gradients -------------------------------------------------------------------------
def test_gradients_match_float64_finite_differences():
  with jax.enable_x64(True):
    x = jnp.asarray(_regions(seed=6, b=2, r=3), jnp.float64)
    mask = jnp.array([[True, True, True], [True, True, False]])
    module = VisualSelfAttention(embed_dim=4, num_region=3, dropout=0.0)
    variables = jax.tree.map(lambda v: v.astype(jnp.float64), _variables(module, x))
    target = jnp.asarray(np.random.default_rng(7).normal(size=(2, D)))

    def loss(params, regions):
      (pooled, weights), _ = module.apply(
        {"params": params, "batch_stats": variables["batch_stats"]},
        regions,
        mask,
        train=True,
        mutable=("batch_stats",),
      )
      return jnp.sum(pooled * target) + jnp.sum(weights[:, 0])

    _, g_regions = assert_directional_derivatives_match(loss, (variables["params"], x))
    assert np.all(np.asarray(g_regions)[1, 2] == 0.0)  # the padded region
