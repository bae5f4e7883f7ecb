"""Embedding a whole split with the dual encoder's two towers, in batches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jitr.data import pairs


def embed_split(
  encode_image: Callable[..., jax.Array],
  encode_text: Callable[..., jax.Array],
  params: Any,
  split: pairs.RetrievalSplit,
  *,
  batch_size: int = 500,
) -> tuple[np.ndarray, np.ndarray]:
  """``(images [N_img, E], captions [N_cap, E])`` embeddings of every item.

  ``encode_image(params, images, image_mask)`` and ``encode_text(params,
  tokens, lengths)`` are jitted by the caller; the last batch is padded to
  ``batch_size`` so they compile once.
  """

  def run(fn, arrays, n):
    out = []
    for lo in range(0, n, batch_size):
      chunk = [a[lo : lo + batch_size] for a in arrays]
      pad = batch_size - len(chunk[0])
      if pad:
        chunk = [np.concatenate([c, np.repeat(c[-1:], pad, axis=0)]) for c in chunk]
      out.append(np.asarray(fn(params, *chunk))[: batch_size - pad])
    return np.concatenate(out)

  mask = split.image_mask if split.image_mask is not None else np.ones(split.images.shape[:2], bool)
  images = run(encode_image, (split.images, mask), split.num_images)
  width = int(split.lengths.max())
  captions = run(encode_text, (split.tokens[:, :width], split.lengths), split.num_captions)
  return images, captions
