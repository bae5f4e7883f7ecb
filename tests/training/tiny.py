"""A small real Flax dual encoder and batch for training tests."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jitr import losses, training
from jitr.models.vse import dual_encoder_model


def _unit(x):
  return x / jnp.linalg.norm(x, axis=-1, keepdims=True)


class TinyDualEncoder(nn.Module):
  """Dense image tower; embedding-mean + Dense text tower; both L2-normalised."""

  def setup(self):
    self.image_dense = nn.Dense(8)
    self.embed = nn.Embed(20, 8)
    self.text_dense = nn.Dense(8)

  def encode_image(self, images, image_mask=None):
    del image_mask
    return _unit(self.image_dense(images))

  def encode_text(self, tokens, lengths):
    mask = (jnp.arange(tokens.shape[1])[None, :] < lengths[:, None])[..., None]
    words = self.embed(tokens)
    return _unit(self.text_dense(jnp.sum(words * mask, axis=1) / jnp.maximum(lengths[:, None], 1)))

  def __call__(self, images, tokens, lengths, image_mask=None):
    return self.encode_image(images, image_mask), self.encode_text(tokens, lengths)


MODEL = dual_encoder_model(TinyDualEncoder())


def make_batch(seed=0, n_images=8, captions_per_image=2):
  rng = np.random.default_rng(seed)
  ids = np.repeat(np.arange(n_images), captions_per_image).astype(np.int32)
  features = rng.normal(size=(n_images, 6)).astype(np.float32)
  b = len(ids)
  lengths = rng.integers(2, 6, b).astype(np.int32)
  tokens = rng.integers(1, 20, (b, 5)).astype(np.int32) * (np.arange(5)[None] < lengths[:, None])
  return {
    "images": features[ids],
    "tokens": tokens.astype(np.int32),
    "lengths": lengths,
    "image_ids": ids,
    "valid": np.ones(b, bool),
    "reference_vectors": rng.normal(size=(n_images, 3, 4)).astype(np.float32)[ids],
    "caption_vectors": rng.normal(size=(b, 4)).astype(np.float32),
  }


def graded_fn(images, captions, positives):
  return {
    "relevance": losses.relevance_from_embeddings(
      images["reference_vectors"], captions["caption_vectors"], positives=positives
    )
  }


def make_state(tx=None, seed=0):
  variables = MODEL.init(jax.random.key(seed), make_batch())
  return training.create_train_state(variables, tx or optax.sgd(1.0), jax.random.key(1))


LOSS_FN = losses.objective(
  {"triplet": {"weight": 1.0}, "smooth_ndcg": {"weight": 1.0, "temperature": 0.05}}
)


STEPS_PER_EPOCH = 2  # the multi-process run (3 steps) switches the windowed terms
# Every loss of the registry (and both triplet minings, Smooth-NDCG@M, Smooth-NDCG summed over
# the saturation window, SAM with random negatives and the kept triplet, an active and an
# inactive epoch-windowed term).
EVERY_LOSS = {
  "lmh": {"loss": "triplet", "mining": "max"},
  "lsh": {"loss": "triplet", "mining": "sum", "reduction": "sum"},
  "smooth_ndcg": {"temperature": 0.05},
  "smooth_ndcg_at": {"loss": "smooth_ndcg", "temperature": 0.05, "top_m": 3},  # @M
  "smooth_ndcg_window": {"loss": "smooth_ndcg", "temperature": 0.05, "window": True},
  "cmal2r": {"loss": "adaptive_listwise"},
  "sam_hard": {"loss": "semantic_margin_triplet", "input": "metric", "max_margin": 1.0},
  "sam_random": {
    "loss": "semantic_margin_triplet",
    "input": "metric",
    "sampling": "random",
    "keep_triplet": True,
  },
  "lseh": {"loss": "semantic_hard_negatives", "input": "semantic"},
  "warmup": {"loss": "triplet", "mining": "sum", "until_epoch": 1},  # active at step 0
  "later": {"loss": "adaptive_listwise", "from_epoch": 1, "weight": 3.0},  # not yet active
}


def graded_inputs_fn(images, captions, positives):
  """Relevance (positives 1), a CIDEr-like metric in [0, 3] and a cosine in [-1, 1]."""
  raw = losses.relevance_from_embeddings(images["reference_vectors"], captions["caption_vectors"])
  return {"relevance": jnp.where(positives, 1.0, raw), "metric": 3.0 * raw, "semantic": 2 * raw - 1}


EVERY_LOSS_FN = losses.objective(EVERY_LOSS, steps_per_epoch=STEPS_PER_EPOCH)


def one_and_parallel_steps(
  model, state, batch, *, graded_fn=graded_fn, devices=None, parallel_batch=None
):
  """``((state, metrics), (state, metrics))``: one :data:`LOSS_FN` step from ``state`` on
  one device (``axis_name=None``) over ``batch``, then the same step under
  ``DataParallel`` on ``devices`` (all by default) over ``parallel_batch`` (``batch`` by
  default), nothing donated."""
  single = training.make_train_step(LOSS_FN, model=model, graded_fn=graded_fn, axis_name=None)
  want = jax.jit(single)(state, batch)
  dp = training.DataParallel(
    training.make_train_step(LOSS_FN, model=model, graded_fn=graded_fn),
    devices=devices,
    donate=False,
  )
  new_state, metrics = dp(
    dp.put_state(state), dp.put_batch(batch if parallel_batch is None else parallel_batch)
  )
  return want, (dp.get_state(new_state), metrics)


def assert_params_close(want_state, got_state, atol=1e-5):
  """Every parameter of ``got_state`` within ``atol`` of ``want_state``'s."""
  for want, got in zip(jax.tree.leaves(want_state.params), jax.tree.leaves(got_state.params)):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=atol)
