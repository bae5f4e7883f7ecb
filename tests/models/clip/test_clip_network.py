"""The "clip" network of the registry: its train step learns the objective's logit_scale
(the loss equals info_nce at the model's temperature; the scale moves), its captions are the
tower's token ids (TowerTextVocab), and a whole run on a generated image folder trains,
scored zero-shot by a run of no epochs, then trained on from that workdir, is evaluated again
by evaluate_workdir and refuses a network that reads no pixels."""

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


def test_the_step_learns_the_temperature_of_info_nce(folder):
  model = make_model({"name": "clip", "tower": folder[3]}, 49408)
  batch = _batch(["a red disc", "a blue square", "green", "a grey disc"])
  variables = model.init(jax.random.key(0), batch)
  state = training.create_train_state(variables, optax.sgd(0.5), jax.random.key(1))
  loss_fn = objective({"clip": {"loss": "info_nce", "logit_scale": "learned"}})
  step = jax.jit(training.make_train_step(loss_fn, model=model, axis_name=None))
  new, metrics = step(state, batch)
  out, _ = model.forward(variables, batch, train=False)
  scale = np.exp(np.log(1 / 0.07))
  want = info_nce(out.images @ out.captions.T, logit_scale=scale)
  np.testing.assert_allclose(float(metrics["loss"]), float(want), rtol=1e-5)
  np.testing.assert_allclose(float(metrics["learned/logit_scale"]), scale, rtol=1e-6)
  assert float(new.params["logit_scale"]) != float(state.params["logit_scale"])
  fixed = objective({"clip": {"loss": "info_nce"}})  # a number: the scale gets no gradient
  kept, _ = jax.jit(training.make_train_step(fixed, model=model, axis_name=None))(state, batch)
  assert float(kept.params["logit_scale"]) == float(state.params["logit_scale"])


def test_the_step_on_four_devices_equals_one_device(folder):
  """Data parallel: the rows split over 4 devices, InfoNCE at the learned scale over the
  gathered batch; the loss, every parameter and the scale land as on one device."""
  model = make_model({"name": "clip", "tower": folder[3]}, 49408)
  batch = _batch([f"a {c} {s}" for c in ("red", "blue", "green", "grey") for s in ("disc", "box")])
  state = training.create_train_state(
    model.init(jax.random.key(0), batch), optax.sgd(0.5), jax.random.key(1)
  )
  loss_fn = objective({"clip": {"loss": "info_nce", "logit_scale": "learned"}})
  want, want_metrics = jax.jit(training.make_train_step(loss_fn, model=model, axis_name=None))(
    state, batch
  )
  parallel = training.DataParallel(
    training.make_train_step(loss_fn, model=model), devices=jax.devices()[:4], donate=False
  )
  got, metrics = parallel(parallel.put_state(state), parallel.put_batch(batch))
  got = parallel.get_state(got)
  assert float(metrics["loss"]) == pytest.approx(float(want_metrics["loss"]), abs=1e-5)
  assert float(got.params["logit_scale"]) != float(state.params["logit_scale"])
  for a, b in zip(jax.tree.leaves(want.params), jax.tree.leaves(got.params), strict=True):
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), atol=1e-5)


def test_a_run_on_an_image_folder_scores_zero_shot_then_trains_and_evaluates_again(folder):
  from configs import clip, default
  from jitr.experiment import evaluate_workdir, train_and_evaluate

  root, json_path, images, tower = folder
  config = clip.get_config("infonce+sndcg")
  config.dataset = "mini_images"
  config.karpathy.json, config.karpathy.images = json_path, images
  config.model.tower = tower
  config.batch_size, config.num_epochs, config.eval_batch_size = 8, 0, 16
  config.optimizer.learning_rate, config.optimizer.warmup_steps = 1e-3, 1
  config.graded.relevance, config.estimators.lsa.k = "vectors:lsa", 8
  config.data_dir = os.path.join(root, "data")
  workdir = os.path.join(root, "run")
  zero_shot = train_and_evaluate(config, workdir)  # no epochs: the initial tower, step 0
  assert zero_shot.finished and 0 < zero_shot.metrics["rsum"] <= 600
  assert sorted(os.listdir(os.path.join(workdir, "checkpoints", "best"))) == ["0"]
  assert evaluate_workdir(workdir)["rsum"] == pytest.approx(zero_shot.metrics["rsum"])
  with open(os.path.join(workdir, "vocab.json")) as f:
    assert json.load(f)["tower_text"]["tokenizer"] == CLIP_BPE
  config.num_epochs = 1  # the same workdir trained on: fine-tuning from step 0
  result = train_and_evaluate(config, workdir)
  assert result.finished and 0 < result.metrics["rsum"] <= 600
  assert max(map(int, os.listdir(os.path.join(workdir, "checkpoints", "latest")))) == 15
  again = evaluate_workdir(workdir)
  assert again["rsum"] == pytest.approx(result.metrics["rsum"])
  config.model = default.get_config().model  # the region dual encoder
  refused = r"config.model.name: mini_images is an image folder, read as pixels by \['clip'\]"
  with pytest.raises(ValueError, match=refused):
    train_and_evaluate(config, os.path.join(root, "vse"))
  assert not os.path.exists(os.path.join(root, "vse"))
