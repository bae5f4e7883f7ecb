"""Encoding every item of a split in fixed-size batches (one compilation per encoder)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jitr.data import pairs
from jitr.models.retrieval_model import IMAGE_INPUTS, INPUTS


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


def image_inputs(
  split: pairs.RetrievalSplit, model_inputs: Collection[str] = INPUTS
) -> tuple[np.ndarray, ...]:
  """The image-side inputs the model declares (:data:`!IMAGE_INPUTS`, in order):
  ``(images, image_mask)``, an all-valid mask when the split has none, or ``(images,)``
  for a model that reads no mask (vectors: the two-branch network)."""
  if "image_mask" not in model_inputs:
    return (split.images,)
  mask = split.image_mask
  return split.images, mask if mask is not None else np.ones(split.images.shape[:2], bool)


def caption_inputs(
  split: pairs.RetrievalSplit, model_inputs: Collection[str] = INPUTS
) -> tuple[np.ndarray, ...]:
  """The caption-side inputs the model declares (its :attr:`!RetrievalModel.inputs` less
  :data:`!IMAGE_INPUTS`, in order), one row per caption: ``tokens`` cut to the longest
  caption (padding columns no caption uses are cut), ``lengths``, ``text_vectors`` (a
  labelled vector dataset's texts, float32), and any other key as float32 ``[N_cap, ...]``:
  the split's per-caption ``caption_<key>`` when it has one, else its image's ``<key>``.
  The first that the split lacks ends the tuple (the encoder's later arguments keep their
  defaults)."""
  out = []
  for key in model_inputs:
    if key in IMAGE_INPUTS:
      continue
    rows = caption_rows(split, key)
    if rows is None:
      break
    out.append(rows)
  return tuple(out)


def caption_rows(split: pairs.RetrievalSplit, key: str) -> np.ndarray | None:
  """The split's per-caption rows of the model input ``key`` (:func:`caption_inputs`), or
  ``None`` when it has none."""
  if key == "tokens":
    if split.tokens is None:
      return None
    return split.tokens[:, : max(int(split.lengths.max(initial=1)), 1)]
  if key in ("lengths", "text_vectors"):
    return getattr(split, key)
  rows = getattr(split, f"caption_{key}", None)
  if rows is None:
    per_image = getattr(split, key, None)
    if per_image is None:
      return None
    rows = per_image[split.caption_image]
  return np.asarray(rows).astype(np.float32)
