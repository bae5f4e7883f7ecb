"""The two-branch network: each branch is ReLU hidden layers, an output layer and an l2
normalisation, checked against numpy on its own parameters; its registry entry reads image
and text vectors and takes its widths as settings."""

import jax
import numpy as np
import pytest

from jitr.models import MODELS, TwoBranch, make_model
from jitr.models.model_settings import check_model_settings


def numpy_branch(params, x):
  """``l2(W_out · relu(... relu(W_1 x + b_1) ...) + b_out)`` with numpy, float64."""
  layers = sorted(k for k in params if k.startswith("hidden_"))
  h = np.asarray(x, np.float64)
  for name in layers:
    h = np.maximum(h @ np.asarray(params[name]["kernel"]) + np.asarray(params[name]["bias"]), 0)
  out = h @ np.asarray(params["out"]["kernel"]) + np.asarray(params["out"]["bias"])
  return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_each_branch_is_its_mlp_then_l2_normalised():
  module = TwoBranch(image_hidden=(12, 7), text_hidden=(9,), embed_dim=5)
  rng = np.random.default_rng(0)
  images = rng.normal(size=(4, 16)).astype(np.float32)
  texts = rng.normal(size=(3, 6)).astype(np.float32)
  variables = module.init(jax.random.key(0), images, texts)
  params = variables["params"]
  assert sorted(params["image_branch"]) == ["hidden_0", "hidden_1", "out"]
  assert params["text_branch"]["hidden_0"]["kernel"].shape == (6, 9)
  img, txt = module.apply(variables, images, texts)
  np.testing.assert_allclose(img, numpy_branch(params["image_branch"], images), atol=1e-5)
  np.testing.assert_allclose(txt, numpy_branch(params["text_branch"], texts), atol=1e-5)
  np.testing.assert_allclose(np.linalg.norm(img, axis=1), 1.0, atol=1e-5)


def test_the_registry_entry_reads_image_and_text_vectors():
  model = make_model({"name": "twobranch", "image_hidden": [8], "embed_dim": 4}, vocab_size=0)
  assert model.inputs == MODELS["twobranch"].inputs == ("images", "text_vectors")
  assert model.module.image_hidden == (8,) and model.module.text_hidden == (2048,)
  rng = np.random.default_rng(1)
  batch = {
    "images": rng.normal(size=(3, 10)).astype(np.float32),
    "text_vectors": rng.normal(size=(3, 5)).astype(np.float32),
  }
  variables = model.init(jax.random.key(1), batch)
  out, state = model.forward(variables, batch, train=True, rngs={"dropout": jax.random.key(2)})
  assert state == {} and out.aux_losses == {}
  np.testing.assert_allclose(out.images, model.encode_images(variables, batch["images"]))
  np.testing.assert_allclose(out.captions, model.encode_captions(variables, batch["text_vectors"]))
  sim, _ = model.score(variables, out.images, out.captions)
  np.testing.assert_allclose(sim, np.asarray(out.images) @ np.asarray(out.captions).T, atol=1e-6)


def test_dropout_acts_in_training_only():
  module = TwoBranch(image_hidden=(64,), text_hidden=(64,), embed_dim=8, dropout=0.5)
  x = np.ones((2, 6), np.float32)
  variables = module.init(jax.random.key(0), x, x)
  evaluated = module.apply(variables, x, x)
  trained = module.apply(variables, x, x, True, rngs={"dropout": jax.random.key(3)})
  np.testing.assert_allclose(evaluated[0], module.apply(variables, x, x)[0])
  assert not np.allclose(trained[0], evaluated[0])


@pytest.mark.parametrize(
  ("settings", "message"),
  [
    ({"embed_dim": "512"}, "config.model.embed_dim: expected a whole number, got '512' (str)"),
    ({"image_hidden": 2048}, "config.model.image_hidden: expected a list, got 2048 (int)"),
    ({"word_dim": 300}, "config.model.word_dim: not a setting of the 'twobranch' network"),
  ],
)
def test_bad_settings_are_one_line(settings, message):
  with pytest.raises(ValueError) as err:
    check_model_settings({"name": "twobranch", **settings})
  assert str(err.value).startswith(message)
