"""Encoding every item of a split in fixed-size batches (one compilation per encoder)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jitr.data import pairs


def encode_in_batches(
  encode: Callable[..., Any],
  variables: Any,
  arrays: Sequence[np.ndarray],
  *,
  batch_size: int,
) -> Any:
  """``encode(variables, *arrays[lo:lo + batch_size])`` over all rows, concatenated (rows
  first) into one pytree of device arrays ``[N, ...]``.

  ``encode`` is jitted by the caller; the last batch is padded to ``batch_size`` by
  repeating its last row (its outputs are dropped), so it compiles once.
  """
  if batch_size < 1:
    raise ValueError(f"encode_in_batches: batch_size must be >= 1, got {batch_size}")
  n = len(arrays[0])
  out = []
  for lo in range(0, n, batch_size):
    chunk = [a[lo : lo + batch_size] for a in arrays]
    pad = batch_size - len(chunk[0])
    if pad:
      chunk = [np.concatenate([c, np.repeat(c[-1:], pad, axis=0)]) for c in chunk]
    rows = batch_size - pad
    out.append(jax.tree.map(lambda x, rows=rows: x[:rows], encode(variables, *chunk)))
  return jax.tree.map(lambda *xs: jnp.concatenate(xs), *out)


def image_inputs(split: pairs.RetrievalSplit) -> tuple[np.ndarray, np.ndarray]:
  """``(images, image_mask)``; an all-valid mask when the split has none."""
  mask = split.image_mask
  return split.images, mask if mask is not None else np.ones(split.images.shape[:2], bool)


def caption_inputs(split: pairs.RetrievalSplit) -> tuple[np.ndarray, ...]:
  """``(tokens [:, :max length], lengths)``: padding columns no caption uses are cut; with
  concept labels a third array, float32 ``[N_cap, C]``: each caption's own
  (``caption_concept_labels``), else its image's."""
  width = max(int(split.lengths.max()), 1)
  if split.caption_concept_labels is not None:
    labels = split.caption_concept_labels
  elif split.concept_labels is not None:
    labels = split.concept_labels[split.caption_image]
  else:
    return split.tokens[:, :width], split.lengths
  return split.tokens[:, :width], split.lengths, labels.astype(np.float32)
