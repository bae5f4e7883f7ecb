"""Pixel CNN and the dual encoder: shapes, L2 norm, methods, factory."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr.models import ConvEncoder, DualEncoder, create_dual_encoder, similarity

TOKENS = jnp.array([[1, 5, 6, 2], [1, 7, 2, 0]], jnp.int32)
LENGTHS = jnp.array([4, 3], jnp.int32)


def test_cnn_shapes_norm_and_uint8_scaling(make_params):
  images = jax.random.randint(jax.random.key(0), (2, 16, 16, 3), 0, 256).astype(jnp.uint8)
  enc = ConvEncoder(embed_dim=5, channels=(4, 8))
  params = make_params(enc, images)
  assert params["params"]["conv1"]["kernel"].shape == (3, 3, 4, 8)
  as_float = images.astype(jnp.float32) / 127.5 - 1.0
  out, out_float = jax.jit(lambda p: (enc.apply(p, images), enc.apply(p, as_float)))(params)
  assert out.shape == (2, 5)
  np.testing.assert_allclose(jnp.linalg.norm(out, axis=-1), 1.0, rtol=1e-5)
  np.testing.assert_allclose(out_float, out, atol=1e-5)
  with pytest.raises(ValueError, match="takes no mask"):
    jax.eval_shape(enc.init, jax.random.key(0), images, jnp.ones((2, 16), bool))


def test_dual_encoder_regions_and_methods(make_params):
  model = create_dual_encoder(
    vocab_size=10, embed_dim=6, word_dim=4, image_pooling="max", text="gru"
  )
  regions = jax.random.normal(jax.random.key(0), (3, 4, 8))
  mask = jnp.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], bool)
  params = make_params(model, regions, TOKENS, LENGTHS, mask)
  assert set(params["params"]) == {"image_encoder", "text_encoder"}

  @jax.jit  # one compilation for the joint call and both towers alone
  def run(p):
    return (
      model.apply(p, regions, TOKENS, LENGTHS, mask),
      model.apply(p, regions, mask, method=DualEncoder.encode_image),
      model.apply(p, TOKENS, LENGTHS, method="encode_text"),
    )

  (img, txt), img_alone, txt_alone = run(params)
  assert img.shape == (3, 6) and txt.shape == (2, 6)
  np.testing.assert_allclose(jnp.linalg.norm(img, axis=-1), 1.0, rtol=1e-5)
  np.testing.assert_allclose(jnp.linalg.norm(txt, axis=-1), 1.0, rtol=1e-5)
  np.testing.assert_allclose(img_alone, img, atol=1e-6)
  np.testing.assert_allclose(txt_alone, txt, atol=1e-6)
  sim = similarity(img, txt)
  assert sim.shape == (3, 2)
  np.testing.assert_allclose(sim, np.asarray(img) @ np.asarray(txt).T, atol=1e-6)


def test_dual_encoder_pixels_bigru_mean_shapes():
  model = create_dual_encoder(
    vocab_size=10,
    embed_dim=6,
    word_dim=4,
    image="pixels",
    image_pooling="gpo",
    text="bigru",
    text_pooling="mean",
  )
  images = jnp.zeros((2, 32, 32, 3), jnp.uint8)
  img, txt = jax.eval_shape(
    lambda: model.init_with_output(jax.random.key(1), images, TOKENS, LENGTHS)[0]
  )
  assert img.shape == (2, 6) and txt.shape == (2, 6)
  assert img.dtype == txt.dtype == jnp.float32


def test_factory_rejects_unknown_names():
  with pytest.raises(ValueError, match="image must be 'regions' or 'pixels'"):
    create_dual_encoder(vocab_size=10, image="grid")
  with pytest.raises(ValueError, match="text must be 'gru' or 'bigru'"):
    create_dual_encoder(vocab_size=10, text="lstm")
