"""A CLIP / SigLIP dual encoder: both towers, ``logit_scale`` and SigLIP's ``logit_bias``.

``encode_image(images [B, S, S, 3])`` and ``encode_text(tokens [B, L])`` give the towers'
embeddings (unnormalised, as open_clip's ``encode_image`` / ``encode_text``);
``__call__(images, tokens)`` gives ``(u, v, t, b)``: L2-normalised image and text
embeddings, the temperature ``t = exp(logit_scale)`` and the bias ``b`` (0 without one), so
that open_clip's logits are ``t · u vᵀ + b``. The scale and bias are learnable params; a
loss is then given ``sim = t · u vᵀ + b`` with ``logit_scale=1`` (``info_nce``) or
``logit_scale=1, logit_bias=0`` (``sigmoid_pairs``).
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax.numpy as jnp

from jitr.losses.normalize import l2_normalize
from jitr.models.clip.config import ClipConfig
from jitr.models.clip.towers import TextTower, TimmTrunk, VisionTower

Dtype = Any


class ClipModel(nn.Module):
  """Both towers of ``config`` (:func:`~jitr.models.clip_config`); ``dtype``: the
  compute dtype of the matmuls (float32, bfloat16; float64 for checks); ``remat``: recompute
  each block in the backward pass. Params ``visual``, ``text``, ``logit_scale`` and, for
  SigLIP, ``logit_bias`` (scalars)."""

  config: ClipConfig
  dtype: Dtype = jnp.float32
  remat: bool = False

  def setup(self):
    c = self.config
    if c.vision.trunk == "timm":
      self.visual = TimmTrunk(c.vision, self.dtype, self.remat)
    else:
      self.visual = VisionTower(c.vision, c.embed_dim, self.dtype, self.remat)
    self.text = TextTower(c.text, c.embed_dim, self.dtype, self.remat)
    self.logit_scale = self.param("logit_scale", nn.initializers.constant(c.init_logit_scale), ())
    if c.learns_bias:
      self.logit_bias = self.param("logit_bias", nn.initializers.constant(c.init_logit_bias), ())

  def encode_image(self, images):
    return self.visual(images)

  def encode_text(self, tokens):
    return self.text(tokens)

  def __call__(self, images, tokens):
    u = l2_normalize(self.encode_image(images), eps=1e-12)  # torch's F.normalize
    v = l2_normalize(self.encode_text(tokens), eps=1e-12)
    bias = self.logit_bias if self.config.learns_bias else jnp.zeros(())
    return u, v, jnp.exp(self.logit_scale), bias
