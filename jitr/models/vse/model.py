"""The dual encoder: an image encoder and a text encoder into one joint space.

``DualEncoder(image_encoder, text_encoder)`` returns L2-normalised image and
caption embeddings; the similarity matrix the losses take is
``img @ txt.T``. Each tower can also be run alone
(``model.apply(params, ..., method="encode_image")``) to embed a test set once.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.models.common import encode_row_chunks
from jitr.models.vse.cnn import ConvEncoder
from jitr.models.vse.region_encoder import RegionEncoder
from jitr.models.vse.text_gru import GRUTextEncoder


class DualEncoder(nn.Module):
  """``(images, tokens, lengths, image_mask=None) -> (img [B, E], txt [B', E])``.

  ``images`` is whatever the image encoder takes (region features ``[B, K, D]``
  with ``image_mask`` ``[B, K]``, or pixels ``[B, H, W, 3]``); ``tokens`` ``[B, L]``, or a
  tuple of row chunks each padded to its own width
  (:func:`!jitr.models.common.encode_row_chunks`).
  """

  image_encoder: nn.Module
  text_encoder: nn.Module

  def encode_image(self, images: jax.Array, image_mask: jax.Array | None = None) -> jax.Array:
    if image_mask is None:
      return self.image_encoder(images)
    return self.image_encoder(images, image_mask)

  def encode_text(self, tokens: jax.Array, lengths: jax.Array) -> jax.Array:
    return self.text_encoder(tokens, lengths)

  def __call__(
    self,
    images: jax.Array,
    tokens: jax.Array,
    lengths: jax.Array,
    image_mask: jax.Array | None = None,
  ) -> tuple[jax.Array, jax.Array]:
    return self.encode_image(images, image_mask), encode_row_chunks(
      self.encode_text, tokens, lengths
    )


def create_dual_encoder(
  *,
  vocab_size: int,
  image: str = "regions",
  text: str = "gru",
  embed_dim: int = 1024,
  word_dim: int = 300,
  image_pooling: str = "max",
  text_pooling: str = "last",
  unroll: int = 1,
  dtype: Any = jnp.float32,
) -> DualEncoder:
  """The paper encoders by name.

  ``image``: ``'regions'`` (Dense + ``image_pooling``; VSE++† with ``'max'``,
  VSE∞ with ``'gpo'``) or ``'pixels'`` (:class:`ConvEncoder`; ``image_pooling``
  over its 4×4 grid). ``text``: ``'gru'`` or ``'bigru'`` with ``text_pooling``
  (``'last'`` VSE++, ``'gpo'`` VSE∞).
  """
  if image == "regions":
    img = RegionEncoder(embed_dim=embed_dim, pooling=image_pooling, dtype=dtype)
  elif image == "pixels":
    img = ConvEncoder(embed_dim=embed_dim, pooling=image_pooling, dtype=dtype)
  else:
    raise ValueError(f"create_dual_encoder: image must be 'regions' or 'pixels', got {image!r}")
  if text not in ("gru", "bigru"):
    raise ValueError(f"create_dual_encoder: text must be 'gru' or 'bigru', got {text!r}")
  txt = GRUTextEncoder(
    vocab_size=vocab_size,
    word_dim=word_dim,
    embed_dim=embed_dim,
    bidirectional=text == "bigru",
    pooling=text_pooling,
    unroll=unroll,
    dtype=dtype,
  )
  return DualEncoder(image_encoder=img, text_encoder=txt)
