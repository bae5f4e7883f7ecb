"""The towers' own logic on small configs of the real layouts (parity with open_clip itself
is tests/parity, run by .ci/open_clip_parity.sh): shapes, masks and pooling, remat and
compute dtype, activations."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erf

from jitr.models.clip import ClipModel
from jitr.models.clip.blocks import activation
from tests.models.clip.tiny_clip import inputs, random_params, tiny_clip, tiny_siglip


@functools.cache
def _apply(config, dtype=jnp.float32, remat=False):
  model = ClipModel(config, dtype=dtype, remat=remat)
  return jax.jit(lambda p, x, t: model.apply({"params": p}, x, t))


@functools.cache
def _encode_text(config):
  model = ClipModel(config)
  return jax.jit(lambda p, t: model.apply({"params": p}, t, method=ClipModel.encode_text))


@pytest.mark.parametrize("make", [tiny_clip, tiny_siglip])
def test_outputs_are_unit_embeddings_scale_and_bias(make):
  config = make()
  params = random_params(config)
  images, tokens = inputs(config)
  u, v, scale, bias = _apply(config)(params, images, tokens)
  assert u.shape == v.shape == (3, config.embed_dim)
  np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, rtol=1e-6)
  np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-6)
  np.testing.assert_allclose(scale, np.exp(params["logit_scale"]), rtol=1e-6)
  np.testing.assert_allclose(bias, params.get("logit_bias", 0.0))
  assert ("logit_bias" in params) == config.learns_bias


def test_clip_text_ignores_what_follows_the_eot():
  """Causal mask + pooling at the EOT: tokens after it (padding or not) and the padded
  length change nothing, so a batch may be cut to its longest caption."""
  config = tiny_clip()
  params = random_params(config)
  _, tokens = inputs(config)
  encode = _encode_text(config)
  base = np.asarray(encode(params, tokens))
  noisy = np.asarray(tokens).copy()
  for row in noisy:
    eot = int(np.argmax(row))
    row[eot + 1 :] = np.arange(1, len(row) - eot) % 7 + 1
  np.testing.assert_allclose(encode(params, jnp.asarray(noisy)), base, rtol=1e-5, atol=1e-6)
  longest = int(np.max(np.argmax(np.asarray(tokens), axis=1))) + 1
  np.testing.assert_allclose(encode(params, tokens[:, :longest]), base, rtol=1e-5, atol=1e-6)


def test_siglip_text_reads_the_whole_context():
  """No mask, the last position pooled: the padding is part of the caption's encoding."""
  config = tiny_siglip()
  params = random_params(config)
  _, tokens = inputs(config)
  encode = _encode_text(config)
  changed = tokens.at[0, 1].set(tokens[0, 1] + 1)
  moved = np.asarray(encode(params, changed)) - np.asarray(encode(params, tokens))
  assert np.abs(moved[0]).max() > 1e-4 and np.abs(moved[1:]).max() == 0


def test_remat_changes_neither_values_nor_gradients():
  """Both towers stack their blocks through the same builder: one config checks it."""
  config = tiny_clip()
  params = random_params(config)
  images, tokens = inputs(config)

  def loss(p, remat):
    u, v, scale, bias = ClipModel(config, remat=remat).apply({"params": p}, images, tokens)
    return jnp.sum(jnp.tanh(scale * u @ v.T + bias))

  plain = jax.jit(jax.value_and_grad(functools.partial(loss, remat=False)))(params)
  remat = jax.jit(jax.value_and_grad(functools.partial(loss, remat=True)))(params)
  for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(remat), strict=True):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_bfloat16_matmuls_stay_close_to_float32():
  config = tiny_clip()
  params = random_params(config, scale=0.1)
  images, tokens = inputs(config)
  full = _apply(config)(params, images, tokens)
  half = _apply(config, jnp.bfloat16)(params, images, tokens)
  for a, b in zip(full[:2], half[:2], strict=True):
    assert b.dtype == jnp.float32  # norms, softmax and outputs stay float32
    cosines = np.sum(np.asarray(a) * np.asarray(b), axis=1)
    assert cosines.min() > 0.99


def test_activations():
  x = np.linspace(-4, 4, 17)
  np.testing.assert_allclose(
    activation("gelu")(x), 0.5 * x * (1 + erf(x / np.sqrt(2))), rtol=1e-6, atol=1e-7
  )
  np.testing.assert_allclose(
    activation("quick_gelu")(x), x / (1 + np.exp(-1.702 * x)), rtol=1e-6, atol=1e-7
  )
  tanh = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
  np.testing.assert_allclose(activation("gelu_tanh")(x), tanh, rtol=1e-6, atol=1e-6)
  quick = tiny_clip(quick_gelu=True)
  assert quick.vision.act == quick.text.act == "quick_gelu"
  params = random_params(quick)
  images, tokens = inputs(quick)
  a = _apply(quick)(params, images, tokens)[0]
  b = _apply(tiny_clip())(params, images, tokens)[0]
  assert np.abs(np.asarray(a) - np.asarray(b)).max() > 1e-3


def test_images_of_another_size_are_one_line():
  config = tiny_clip()
  params = random_params(config)
  _, tokens = inputs(config, 1)
  with pytest.raises(
    ValueError, match=r"^images: shape \(3, 32, 32\), expected \(32, 32, 3\) \(channels last\)"
  ):
    ClipModel(config).apply({"params": params}, jnp.zeros((1, 3, 32, 32)), tokens)
  with pytest.raises(ValueError, match=r"^tokens: length 13, expected at most 12"):
    ClipModel(config).apply(
      {"params": params}, jnp.zeros((1, 13), jnp.int32), method=ClipModel.encode_text
    )
