"""Small CLIP and SigLIP configs of the real layouts, for the default suite's tests."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jitr.models.clip import ClipModel, clip_config

TINY = {
  "embed_dim": 16,
  "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "patch_size": 8, "head_width": 16},
  "text_cfg": {"context_length": 12, "vocab_size": 50, "width": 32, "heads": 2, "layers": 2},
}


def tiny_clip(**top):
  """ViT-B-like CLIP, 2 blocks of width 32 per tower, 32-pixel images of 8-pixel patches."""
  return clip_config({**TINY, **top}, name="tiny-clip")


def tiny_siglip():
  """ViT-B-16-SigLIP's layout (timm trunk, map head, bidirectional text, last-token
  pooling, projection bias, logit bias), shrunk to width 32 and 2 blocks."""
  config = clip_config("ViT-B-16-SigLIP")
  vision = dataclasses.replace(
    config.vision, image_size=32, patch_size=8, width=32, layers=2, heads=2, mlp_width=64
  )
  text = dataclasses.replace(
    config.text, context_length=10, vocab_size=40, width=32, layers=2, heads=2, mlp_width=64
  )
  return dataclasses.replace(config, name="tiny-siglip", embed_dim=32, vision=vision, text=text)


def inputs(config, n=3, seed=0):
  """``(images [n, S, S, 3] float32, tokens [n, L] int32)``; CLIP rows end in the EOT
  (the highest id) and are 0-padded after it."""
  rng = np.random.default_rng(seed)
  size, length = config.vision.image_size, config.text.context_length
  images = rng.normal(size=(n, size, size, 3)).astype(np.float32)
  tokens = np.zeros((n, length), np.int32)
  for i in range(n):
    used = 3 + (i * 4) % (length - 3)
    tokens[i, :used] = rng.integers(1, config.text.vocab_size - 1, size=used)
    tokens[i, used - 1] = config.text.vocab_size - 1
  return jnp.asarray(images), jnp.asarray(tokens)


def random_params(config, seed=0, scale=0.3):
  """Params of ``config``'s tree (shapes from ``eval_shape``), values ``N(0, scale²)``."""
  images, tokens = inputs(config, 1)
  shapes = jax.eval_shape(ClipModel(config).init, jax.random.key(0), images, tokens)["params"]
  rng = np.random.default_rng(seed)
  return jax.tree.map(lambda s: rng.normal(0.0, scale, s.shape).astype(np.float32), shapes)
