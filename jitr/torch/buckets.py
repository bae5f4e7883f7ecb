"""Pads a batch to a bucket size so a ragged last batch compiles once per bucket.

A jitted loss compiles once per input shape. Padding ``sim`` ``[n_img, n_txt]``
to ``[b(n_img), b(n_txt)]`` with ``where`` False on the new rows and columns
leaves every jitr loss unchanged (padded entries never count, rax's convention),
so an epoch whose last batch is short compiles at most one program per bucket.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import torch

from jitr.torch import bridge

__all__ = ["bucket_size", "pad_matrix", "padded_loss"]


def bucket_size(n: int, bucket: int | str = "pow2") -> int:
  """The padded size of ``n``: the next power of two (``"pow2"``), or the next multiple
  of ``bucket`` (an int, e.g. 64: ``⌈n/64⌉·64``).

  >>> bucket_size(100), bucket_size(100, 64), bucket_size(128, 64)
  (128, 128, 128)
  """
  if n < 1:
    raise ValueError(f"n: expected an int >= 1, got {n!r}")
  if bucket == "pow2":
    return 1 << (n - 1).bit_length()
  if isinstance(bucket, bool) or not isinstance(bucket, int) or bucket < 1:
    raise ValueError(f"bucket: expected 'pow2' or an int >= 1, got {bucket!r}")
  return -(-n // bucket) * bucket


def pad_matrix(x: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
  """``x`` ``[n, m]`` in the top-left corner of zeros (False) ``[rows, cols]``;
  differentiable (the gradient of the padding is dropped). ``x`` itself when no
  padding is needed."""
  if tuple(x.shape) == (rows, cols):
    return x
  out = x.new_zeros((rows, cols))
  out[: x.shape[0], : x.shape[1]] = x
  return out


def padded_loss(
  name_or_fn: str | Callable[..., Any],
  sim: torch.Tensor,
  *args: Any,
  bucket: int | str = "pow2",
  **kwargs: Any,
):
  """:func:`jitr.torch.loss` on the batch padded to ``bucket_size`` in both dimensions.

  Every tensor argument shaped like ``sim`` (masks, relevance, graded inputs, also
  inside dicts) is padded with zeros / False; ``where`` (default: all valid,
  broadcast to ``sim``'s shape) is padded with False. Values and gradients are
  those of the unpadded call; a square batch stays square, so the default
  identity ``positives`` is unchanged.
  """
  shape = tuple(sim.shape)
  padded = (bucket_size(shape[0], bucket), bucket_size(shape[1], bucket))
  if shape[0] == shape[1]:
    padded = (max(padded),) * 2

  def pad(x):
    if isinstance(x, torch.Tensor) and tuple(x.shape) == shape:
      return pad_matrix(x, *padded)
    return x

  where = kwargs.pop("where", None)
  where = torch.ones(shape, dtype=torch.bool, device=sim.device) if where is None else where
  where = torch.broadcast_to(where.to(torch.bool), shape)
  args, kwargs = jax.tree_util.tree_map(
    pad, (args, kwargs), is_leaf=lambda x: isinstance(x, torch.Tensor)
  )
  return bridge.loss(name_or_fn, pad_matrix(sim, *padded), *args, where=pad(where), **kwargs)
