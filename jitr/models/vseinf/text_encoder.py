"""VSE∞'s text tower (official ``EncoderText``, lib/encoders.py)::

    h = BERT(ids, attention_mask = [ids ≠ 0])        [B, L, hidden] (last hidden state)
    e_t = W h_t + b                                  Linear hidden → embed_dim
    v = GPO(e_1..e_n)                                over the n = lengths valid tokens
    out = v / (‖v‖₂ + 1e-8)

``ids`` are WordPiece ids with ``[CLS]`` and ``[SEP]`` (padding id 0) and ``lengths``
their counts, both included in the pooling as the official code counts them. The
Linear starts as PyTorch's ``nn.Linear``.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.losses.normalize import l2_normalize_additive
from jitr.models.common import lengths_to_mask
from jitr.models.gpo import GPO
from jitr.models.vseinf.init import torch_dense

EPS = 1e-8


class TextEncoder(nn.Module):
  """``(tokens [B, L], lengths [B], *, train) -> [B, embed_dim]``; ``bert`` is a
  :class:`~jitr.models.bert.BertEncoder` (``(ids, attention_mask, *, train) -> [B, L,
  hidden]``), which a parent may own (its parameters then live under the parent)."""

  bert: nn.Module
  embed_dim: int = 1024
  normalize: bool = True
  dtype: Any = jnp.float32

  @nn.compact
  def __call__(self, tokens: jax.Array, lengths: jax.Array, *, train: bool = False) -> jax.Array:
    if tokens.ndim != 2 or lengths.shape != tokens.shape[:1]:
      raise ValueError(
        f"vseinf text encoder: tokens must be [B, L] and lengths [B], got {tokens.shape} "
        f"and {lengths.shape}"
      )
    hidden = self.bert(tokens, (tokens != 0).astype(jnp.int32), train=train)
    emb = torch_dense(self.embed_dim, hidden.shape[-1], "linear", self.dtype)(hidden)
    mask = lengths_to_mask(lengths, tokens.shape[1])
    pooled, _ = GPO(bias=False, name="gpool")(emb.astype(jnp.float32), mask)
    return l2_normalize_additive(pooled, eps=EPS) if self.normalize else pooled
