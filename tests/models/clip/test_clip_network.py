"""The "clip" network of the registry: its train step learns the objective's logit_scale
(the loss equals info_nce at the model's temperature; the scale moves), its captions are the
tower's token ids (TowerTextVocab), and a whole run on a generated image folder trains,
is evaluated again by evaluate_workdir and refuses a network that reads no pixels."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jitr import training
from jitr.data.tower_text_vocab import CLIP_BPE, TowerTextVocab
from jitr.data.wordpiece_vocab import load_workdir_vocab
from jitr.losses import info_nce, objective
from jitr.models import make_model
from tests.data.karpathy_folder import write_karpathy_folder, write_tiny_tower


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
  root = tmp_path_factory.mktemp("clip_run")
  json_path, images = write_karpathy_folder(str(root))
  return str(root), json_path, images, write_tiny_tower(str(root))


def test_tower_captions_are_clip_ids_cut_after_the_end_token(tmp_path):
  vocab = TowerTextVocab(CLIP_BPE, 16, True, 49408)
  ids, lengths = vocab.encode_batch(["a red square", "a disc"])
  assert ids.shape == (2, 16) and list(lengths) == [5, 4]
  assert ids[0, 0] == 49406 and ids[0, 4] == 49407 and not ids[0, 5:].any()
  vocab.save(tmp_path / "vocab.json")
  assert load_workdir_vocab(str(tmp_path / "vocab.json")) == vocab
  bidirectional = TowerTextVocab(CLIP_BPE, 16, False, 49408)
  assert list(bidirectional.encode_batch(["a disc"])[1]) == [16]  # SigLIP: every position


def _batch(captions: list[str]) -> dict:
  rng = np.random.default_rng(0)
  ids, _ = TowerTextVocab(CLIP_BPE, 16, True, 49408).encode_batch(captions)
  n = len(captions)
  return {
    "images": jnp.asarray(rng.normal(size=(n, 32, 32, 3)), jnp.float32),
    "tokens": jnp.asarray(ids),
    "image_ids": jnp.arange(n, dtype=jnp.int32),
    "caption_indices": jnp.arange(n, dtype=jnp.int32),
    "valid": jnp.ones(n, bool),
  }


def test_the_step_learns_the_temperature_of_info_nce_on_one_device_or_four(folder):
  """The loss is info_nce at the model's temperature and the scale moves (with a number
  it does not); data parallel over 4 devices (InfoNCE over the gathered batch), the loss,
  every parameter and the scale land as on one device."""
  model = make_model({"name": "clip", "tower": folder[3]}, 49408)
  batch = _batch([f"a {c} {s}" for c in ("red", "blue", "green", "grey") for s in ("disc", "box")])
  variables = model.init(jax.random.key(0), batch)
  state = training.create_train_state(variables, optax.sgd(0.5), jax.random.key(1))
  loss_fn = objective({"clip": {"loss": "info_nce", "logit_scale": "learned"}})
  new, metrics = jax.jit(training.make_train_step(loss_fn, model=model, axis_name=None))(
    state, batch
  )
  out, _ = model.forward(variables, batch, train=False)
  scale = np.exp(np.log(1 / 0.07))
  want = info_nce(out.images @ out.captions.T, logit_scale=scale)
  np.testing.assert_allclose(float(metrics["loss"]), float(want), rtol=1e-5)
  np.testing.assert_allclose(float(metrics["learned/logit_scale"]), scale, rtol=1e-6)
  assert float(new.params["logit_scale"]) != float(state.params["logit_scale"])
  parallel = training.DataParallel(
    training.make_train_step(loss_fn, model=model), devices=jax.devices()[:4], donate=False
  )
  got, got_metrics = parallel(parallel.put_state(state), parallel.put_batch(batch))
  got = parallel.get_state(got)
  assert float(got_metrics["loss"]) == pytest.approx(float(metrics["loss"]), abs=1e-5)
  for a, b in zip(jax.tree.leaves(new.params), jax.tree.leaves(got.params), strict=True):
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), atol=1e-5)
  fixed = objective({"clip": {"loss": "info_nce"}})  # a number: the scale gets no gradient
  kept, _ = jax.jit(training.make_train_step(fixed, model=model, axis_name=None))(state, batch)
  assert float(kept.params["logit_scale"]) == float(state.params["logit_scale"])


def test_a_run_on_an_image_folder_trains_and_evaluates_again(folder):
  from configs import clip, default
  from jitr.experiment import evaluate_workdir, train_and_evaluate

  root, json_path, images, tower = folder
  config = clip.get_config("infonce+sndcg")
  config.dataset = "mini_images"
  config.karpathy.json, config.karpathy.images = json_path, images
  config.model.tower = tower
  config.batch_size, config.num_epochs, config.eval_batch_size = 8, 1, 16
  config.optimizer.learning_rate, config.optimizer.warmup_steps = 1e-3, 1
  config.graded.relevance, config.estimators.lsa.k = "vectors:lsa", 8
  config.data_dir = os.path.join(root, "data")
  workdir = os.path.join(root, "run")
  result = train_and_evaluate(config, workdir)
  assert result.finished and 0 < result.metrics["rsum"] <= 600
  with open(os.path.join(workdir, "vocab.json")) as f:
    assert json.load(f)["tower_text"]["tokenizer"] == CLIP_BPE
  again = evaluate_workdir(workdir)
  assert again["rsum"] == pytest.approx(result.metrics["rsum"])
  config.model = default.get_config().model  # the region dual encoder
  refused = r"config.model.name: mini_images is an image folder, read as pixels by \['clip'\]"
  with pytest.raises(ValueError, match=refused):
    train_and_evaluate(config, os.path.join(root, "vse"))
  assert not os.path.exists(os.path.join(root, "vse"))


def _shapes_config(tower: str, data_dir: str):
  """A run of the tiny tower on jitr_shapes/tiny: InfoNCE at the learned scale."""
  from configs import default

  config = default.get_config()
  config.shapes_config = "tiny"
  config.model = {"name": "clip", "tower": tower}
  config.loss = {"clip": {"loss": "info_nce", "weight": 1.0, "logit_scale": "learned"}}
  config.graded.relevance = "oracle"
  config.batch_size, config.num_epochs, config.eval_batch_size = 40, 1, 16
  config.vocab_min_coverage = 0.0
  config.data_dir = data_dir
  return config


def test_pixel_towers_read_the_rendered_scenes_of_jitr_shapes(folder, tmp_path):
  """A network of pixel towers on jitr_shapes: the rendered 64 × 64 scenes, made into the
  tower's inputs as image files are (ImageArrays: the evaluation transform, training
  crops)."""
  from PIL import Image

  from jitr.data.image_files import ImageArrays
  from jitr.data.image_transforms import eval_image
  from jitr.data.shapes import tfds as shapes_tfds
  from jitr.experiment.loaded_data import load_data
  from jitr.models.clip.open_clip_configs import OPENAI

  config = _shapes_config(folder[3], str(tmp_path / "data"))
  data = load_data(config, config.data_dir)
  test = data.splits["test"]
  assert isinstance(test.images, ImageArrays) and test.images.shape == (10, 32, 32, 3)
  assert test.image_mask is None and data.exact is not None
  scenes = shapes_tfds.load_split("test", data_dir=config.data_dir, config="tiny")["image"]
  np.testing.assert_array_equal(test.images[3], eval_image(Image.fromarray(scenes[3]), 32, OPENAI))
  crops = test.images.take([3, 3], seeds=[7, 8])
  assert crops.shape == (2, 32, 32, 3) and not np.array_equal(crops[0], crops[1])


@pytest.mark.slow
def test_a_run_on_jitr_shapes_trains_on_its_rendered_scenes(folder, tmp_path):
  from jitr.experiment import train_and_evaluate

  config = _shapes_config(folder[3], str(tmp_path / "data"))
  result = train_and_evaluate(config, str(tmp_path / "run"))
  assert result.finished and 0 < result.metrics["rsum"] <= 600
  assert 0 < result.metrics["ndcg/i2t/NDCG@10"] <= 100  # the exact relevance


def test_a_clip_tower_given_inline_learns_siglip_bias_with_clip_bpe():
  """``config.model.tower`` as an open_clip model config object; its ``init_logit_bias``
  gives a CLIP tower (CLIP's BPE) SigLIP's learned bias: the sigmoid loss at the model's
  scale and bias, ``-1/B Σ_ij log σ(y_ij (t s_ij + b))``, and the bias moves."""
  from jitr.models.clip.network import tower_inputs
  from jitr.models.model_settings import check_model_settings
  from tests.data.karpathy_folder import TINY_TOWER

  tower = {**TINY_TOWER, "init_logit_scale": float(np.log(10.0)), "init_logit_bias": -10.0}
  check_model_settings({"name": "clip", "tower": tower})
  assert tower_inputs({"tower": tower}).tokenizer == ""  # CLIP's BPE: no folder needed
  model = make_model({"name": "clip", "tower": tower}, 49408)
  batch = _batch([f"a {c} {s}" for c in ("red", "blue", "green") for s in ("disc", "box")])
  variables = model.init(jax.random.key(0), batch)
  state = training.create_train_state(variables, optax.sgd(0.5), jax.random.key(1))
  loss_fn = objective(
    {"siglip": {"loss": "sigmoid_pairs", "logit_scale": "learned", "logit_bias": "learned"}}
  )
  new, metrics = jax.jit(training.make_train_step(loss_fn, model=model, axis_name=None))(
    state, batch
  )
  out, _ = model.forward(variables, batch, train=False)
  sim = np.asarray(out.images @ out.captions.T, np.float64)
  labels = 2 * np.eye(len(sim)) - 1
  want = np.sum(np.logaddexp(0.0, -labels * (10.0 * sim - 10.0))) / len(sim)
  np.testing.assert_allclose(float(metrics["loss"]), want, rtol=1e-5)
  np.testing.assert_allclose(float(metrics["learned/logit_bias"]), -10.0)
  assert float(new.params["logit_bias"]) != -10.0


def test_an_inline_tower_and_a_siglip_tokenizer_are_checked_in_one_line():
  from jitr.models.clip.network import tower_inputs
  from jitr.models.model_settings import check_model_settings

  with pytest.raises(ValueError, match=r"^config.model.tower: expected a string or an object"):
    check_model_settings({"name": "clip", "tower": ["ViT-B-16"]})
  with pytest.raises(ValueError, match=r"^config.model.tower: no vision_cfg object"):
    make_model({"name": "clip", "tower": {"embed_dim": 16}}, 49408)
  siglip = (
    r"^config.model.tokenizer: the text tower of ViT-B-16-SigLIP reads the ids of "
    r"timm/ViT-B-16-SigLIP: needs its tokenizer folder \(tokenizer.json\), not CLIP's BPE$"
  )
  with pytest.raises(ValueError, match=siglip):
    tower_inputs({"tower": "ViT-B-16-SigLIP"})
