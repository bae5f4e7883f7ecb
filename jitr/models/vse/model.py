"""The dual encoder: an image encoder and a text encoder into one joint space.

``DualEncoder(image_encoder, text_encoder)`` returns L2-normalised image and
caption embeddings; the similarity matrix the losses take is
``img @ txt.T``. Each tower can also be run alone
(``model.apply(params, ..., method="encode_image")``) to embed a test set once.
"""

from __future__ import annotations

import dataclasses
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


@dataclasses.dataclass(frozen=True)
class DualEncoderSettings:
  """The paper encoders' settings (``config.model`` of ``"vse"``).

  ``image``: ``'regions'`` (Dense + ``image_pooling``; VSE++† with ``'max'``, VSE∞ with
  ``'gpo'``) or ``'pixels'`` (:class:`ConvEncoder`; ``image_pooling`` over its 4×4 grid).
  ``text``: ``'gru'`` or ``'bigru'`` with ``text_pooling`` (``'last'`` VSE++, ``'gpo'``
  VSE∞). ``unroll``: the GRU scan's unroll; ``dtype``: the towers' computation dtype.
  """

  image: str = "regions"
  text: str = "gru"
  embed_dim: int = 1024
  word_dim: int = 300
  image_pooling: str = "max"
  text_pooling: str = "last"
  unroll: int = 1
  dtype: Any = jnp.float32


def create_dual_encoder(*, vocab_size: int, **settings: Any) -> DualEncoder:
  """The paper encoders by name: ``settings`` are the fields of
  :class:`!jitr.models.vse.DualEncoderSettings` (``image``, ``text``, ``embed_dim``,
  ``word_dim``, ``image_pooling``, ``text_pooling``, ``unroll``, ``dtype``)."""
  return dual_encoder_of(DualEncoderSettings(**settings), vocab_size)


def dual_encoder_of(settings: DualEncoderSettings, vocab_size: int) -> DualEncoder:
  """The :class:`DualEncoder` ``settings`` describe, over a vocabulary of ``vocab_size``."""
  s = settings
  if s.image == "regions":
    img = RegionEncoder(embed_dim=s.embed_dim, pooling=s.image_pooling, dtype=s.dtype)
  elif s.image == "pixels":
    img = ConvEncoder(embed_dim=s.embed_dim, pooling=s.image_pooling, dtype=s.dtype)
  else:
    raise ValueError(f"create_dual_encoder: image must be 'regions' or 'pixels', got {s.image!r}")
  if s.text not in ("gru", "bigru"):
    raise ValueError(f"create_dual_encoder: text must be 'gru' or 'bigru', got {s.text!r}")
  txt = GRUTextEncoder(
    vocab_size=vocab_size,
    word_dim=s.word_dim,
    embed_dim=s.embed_dim,
    bidirectional=s.text == "bigru",
    pooling=s.text_pooling,
    unroll=s.unroll,
    dtype=s.dtype,
  )
  return DualEncoder(image_encoder=img, text_encoder=txt)
