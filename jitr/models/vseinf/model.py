"""VSE∞ as its official code builds it (woodfrog/vse_infty, ``VSEModel`` with
``precomp_enc_type="basic"``): BUTD regions through :class:`ImageEncoder`, captions
through BERT and :class:`TextEncoder`, both L2-normalised into one space, ``s = img @ txt.T``.

The BERT is a top-level submodule (``params["bert"]``), so the optimizer can give it its
own learning rate (``optimizer.module_lr_factors = {"bert": 0.1}``, the official 0.1×);
the text head's Linear and GPO are ``params["text_encoder"]``, the image tower's
``params["image_encoder"]``.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.models.bert import BertConfig, BertEncoder
from jitr.models.common import encode_row_chunks
from jitr.models.vseinf.image_encoder import ImageEncoder
from jitr.models.vseinf.text_encoder import TextEncoder


class VSEInfinity(nn.Module):
  """``(images, tokens, lengths, image_mask=None, *, train=False) -> (img [B, E], txt [B, E])``.

  ``tokens``: ``[B, L]``, or a tuple of row chunks each padded to its own width
  (:func:`!jitr.models.common.encode_row_chunks`).
  ``dtype`` / ``remat`` go to the BERT (its computation dtype; rematerialised layers).
  """

  bert_config: BertConfig
  embed_dim: int = 1024
  img_dim: int = 2048
  dtype: Any = jnp.float32
  remat: bool = False
  axis_name: str | None = None

  def setup(self):
    self.bert = BertEncoder(self.bert_config, dtype=self.dtype, remat=self.remat)
    self.text_encoder = TextEncoder(bert=self.bert, embed_dim=self.embed_dim, dtype=self.dtype)
    self.image_encoder = ImageEncoder(
      embed_dim=self.embed_dim, img_dim=self.img_dim, axis_name=self.axis_name, dtype=self.dtype
    )

  def encode_image(
    self, images: jax.Array, image_mask: jax.Array | None = None, *, train: bool = False
  ) -> jax.Array:
    return self.image_encoder(images, image_mask, train=train)

  def encode_text(self, tokens: jax.Array, lengths: jax.Array, *, train: bool = False) -> jax.Array:
    return self.text_encoder(tokens, lengths, train=train)

  def __call__(
    self,
    images: jax.Array,
    tokens: jax.Array,
    lengths: jax.Array,
    image_mask: jax.Array | None = None,
    *,
    train: bool = False,
  ) -> tuple[jax.Array, jax.Array]:
    return (
      self.encode_image(images, image_mask, train=train),
      encode_row_chunks(lambda t, n: self.encode_text(t, n, train=train), tokens, lengths),
    )
