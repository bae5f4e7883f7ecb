"""CLIP's and SigLIP's towers in Flax, as open_clip builds them (eval mode).

Image tower, open_clip's ViT (``trunk="open_clip"``), for images ``[B, S, S, 3]``
(channels last) cut into ``N = (S/p)²`` patches::

    t   = [c ; Conv_p(x)] + P            # class token c, positions P [N+1, W]; conv without bias
    f   = LN_post(Blocks(LN_pre(t)))[:, 0] · Proj

SigLIP's timm trunk (``trunk="timm"``): ``t = Conv_p(x) + b + P`` (no class token), ``h =
LN(Blocks(t))``, then the attention-pool head (``map``): one learned query ``ℓ``,
``a = Dense_out(MHA(q = Dense_q(ℓ), k, v = Dense_kv(h)))``, ``f = a + MLP(LN(a))``; no
projection. Text tower, tokens ``x`` ``[B, L]`` (``L ≤ context_length``)::

    h = LN_final(Blocks(E[x] + P[:L], mask))     # mask: causal (CLIP) or none (SigLIP)
    f = Proj(h[b, argmax_l x_bl])                # CLIP: at the EOT token (the highest id)
    f = Proj(h[b, L-1])                          # SigLIP: the last position

With the causal mask and argmax pooling a caption's embedding does not depend on the
padding after its EOT, so batches may be cut to their longest caption.
"""

from __future__ import annotations

from typing import Any

import chex
import flax.linen as nn
import jax.numpy as jnp

from jitr.models.clip.blocks import Mlp, attend, causal_mask, dense_rows, stack
from jitr.models.clip.config import ClipTextConfig, ClipVisionConfig
from jitr.models.common import wide_dtype

Dtype = Any
_EMBED_INIT = nn.initializers.normal(0.02)


class PatchEmbed(nn.Module):
  """The strided ``p × p`` convolution of the patches (params ``kernel`` ``[p, p, 3, W]``,
  ``bias`` ``[W]``, as ``nn.Conv`` holds them), computed as one matrix product of the
  flattened patches ``[B·N, p·p·3]`` with the kernel ``[p·p·3, W]``: the same values as the
  convolution (``padding="VALID"``: a remainder of the image beyond ``⌊S / p⌋`` patches is
  not seen), which XLA's CPU backend runs several times faster."""

  width: int
  patch: int
  use_bias: bool
  dtype: Dtype = jnp.float32

  @nn.compact
  def __call__(self, images):
    p, (b, s, _, c) = self.patch, images.shape
    kernel = self.param("kernel", nn.initializers.lecun_normal(), (p, p, c, self.width))
    g = s // p
    x = images[:, : g * p, : g * p].reshape(b, g, p, g, p, c).transpose(0, 1, 3, 2, 4, 5)
    x = x.reshape(b * g * g, p * p * c).astype(self.dtype)
    x = x @ kernel.reshape(p * p * c, self.width).astype(self.dtype)
    if self.use_bias:
      x = x + self.param("bias", nn.initializers.zeros_init(), (self.width,)).astype(self.dtype)
    return x.reshape(b, g * g, self.width)


def _patches(cfg: ClipVisionConfig, images, dtype: Dtype, bias: bool):
  """``[B, N, W]`` patch embeddings of ``[B, S, S, 3]`` images (:class:`PatchEmbed`)."""
  chex.assert_rank(images, 4)
  if images.shape[1:] != (cfg.image_size, cfg.image_size, 3):
    raise ValueError(
      f"images: shape {images.shape[1:]}, expected ({cfg.image_size}, {cfg.image_size}, 3) "
      "(channels last)"
    )
  embed = PatchEmbed(cfg.width, cfg.patch_size, bias, dtype, name="patch_embed")
  return embed(images).astype(wide_dtype(dtype))


class VisionTower(nn.Module):
  """open_clip's ``VisionTransformer``: ``__call__(images [B, S, S, 3]) -> [B, embed_dim]``
  (unnormalised). Params ``patch_embed``, ``class_embedding``, ``pos_embed``, ``ln_pre``,
  ``transformer``, ``ln_post``, ``projection``."""

  config: ClipVisionConfig
  embed_dim: int
  dtype: Dtype = jnp.float32
  remat: bool = False

  @nn.compact
  def __call__(self, images):
    c, w = self.config, wide_dtype(self.dtype)
    x = _patches(c, images, self.dtype, False)
    scale = c.width**-0.5
    cls = self.param("class_embedding", nn.initializers.normal(scale), (c.width,))
    pos = self.param("pos_embed", nn.initializers.normal(scale), (c.grid**2 + 1, c.width))
    x = jnp.concatenate([jnp.broadcast_to(cls, (x.shape[0], 1, c.width)).astype(w), x], axis=1)
    x = nn.LayerNorm(epsilon=c.norm_eps, dtype=w, name="ln_pre")(x + pos)
    x = stack(c, self.dtype, self.remat)(x)
    x = nn.LayerNorm(epsilon=c.norm_eps, dtype=w, name="ln_post")(x[:, 0])
    proj = nn.Dense(self.embed_dim, use_bias=False, dtype=self.dtype, name="projection")
    return proj(x).astype(w)


class AttentionPoolHead(nn.Module):
  """timm's ``AttentionPoolLatent`` (one latent query, ``pool="token"``): ``[B, N, W] ->
  [B, W]``. Params ``latent``, ``q``, ``kv``, ``out``, ``norm``, ``mlp``."""

  heads: int
  mlp_width: int
  norm_eps: float
  dtype: Dtype = jnp.float32

  @nn.compact
  def __call__(self, x):
    b, n, width = x.shape
    w, d = wide_dtype(self.dtype), width // self.heads
    latent = self.param("latent", nn.initializers.normal(width**-0.5), (1, 1, width))
    q = nn.Dense(width, dtype=self.dtype, name="q")(latent).reshape(1, 1, self.heads, d)
    kv = dense_rows(nn.Dense(2 * width, dtype=self.dtype, name="kv"), x)
    kv = kv.reshape(b, n, 2, self.heads, d)
    q = jnp.broadcast_to(q, (b, 1, self.heads, d))
    a = attend(q, kv[:, :, 0], kv[:, :, 1], None, self.dtype).reshape(b, 1, width)
    a = nn.Dense(width, dtype=self.dtype, name="out")(a).astype(w)
    h = nn.LayerNorm(epsilon=self.norm_eps, dtype=w, name="norm")(a)
    a = a + Mlp(self.mlp_width, "gelu", self.dtype, name="mlp")(h).astype(w)
    return a[:, 0]


class TimmTrunk(nn.Module):
  """timm's SigLIP ``VisionTransformer`` (``global_pool="map"``, ``num_classes=0``):
  ``__call__(images [B, S, S, 3]) -> [B, width]``. Params ``patch_embed`` (with bias),
  ``pos_embed``, ``transformer``, ``norm``, ``map_head``."""

  config: ClipVisionConfig
  dtype: Dtype = jnp.float32
  remat: bool = False

  @nn.compact
  def __call__(self, images):
    c, w = self.config, wide_dtype(self.dtype)
    x = _patches(c, images, self.dtype, True)
    pos = self.param("pos_embed", nn.initializers.normal(0.02), (c.grid**2, c.width))
    x = stack(c, self.dtype, self.remat)(x + pos)
    x = nn.LayerNorm(epsilon=c.norm_eps, dtype=w, name="norm")(x)
    return AttentionPoolHead(c.heads, c.mlp_width, c.norm_eps, self.dtype, name="map_head")(x)


class TextTower(nn.Module):
  """open_clip's ``TextTransformer``: ``__call__(tokens [B, L] int) -> [B, embed_dim]``
  (unnormalised). Params ``token_embedding``, ``pos_embed``, ``transformer``,
  ``ln_final``, ``projection``."""

  config: ClipTextConfig
  embed_dim: int
  dtype: Dtype = jnp.float32
  remat: bool = False

  @nn.compact
  def __call__(self, tokens):
    chex.assert_rank(tokens, 2)
    c, w = self.config, wide_dtype(self.dtype)
    length = tokens.shape[1]
    if length > c.context_length:
      raise ValueError(f"tokens: length {length}, expected at most {c.context_length}")
    embed = nn.Embed(
      c.vocab_size, c.width, dtype=w, embedding_init=_EMBED_INIT, name="token_embedding"
    )
    pos = self.param("pos_embed", nn.initializers.normal(0.01), (c.context_length, c.width))
    x = embed(tokens) + pos[:length]
    mask = causal_mask(length) if c.causal else None
    x = stack(c, self.dtype, self.remat)(x, mask)
    x = nn.LayerNorm(epsilon=c.norm_eps, dtype=w, name="ln_final")(x)
    if c.pool == "argmax":
      x = jnp.take_along_axis(x, jnp.argmax(tokens, axis=1)[:, None, None], axis=1)[:, 0]
    else:
      x = x[:, -1]
    proj = nn.Dense(self.embed_dim, use_bias=c.proj_bias, dtype=self.dtype, name="projection")
    return proj(x).astype(w)
