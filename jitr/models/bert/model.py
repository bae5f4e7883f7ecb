"""BERT's encoder (Devlin et al., 2019) in Flax: the last hidden states of Hugging Face's
``BertModel`` in eval mode, for the same weights (:func:`~jitr.models.bert_params`).

For token ids ``x`` ``[B, L]`` and ``mask`` ``[B, L]`` (1 = token, 0 = padding)::

    h_0 = Dropout(LN(E_word[x] + E_pos[0..L) + E_type[token_type_ids]))
    per layer (post-LayerNorm), heads n = 1..N of width d = hidden / N:
      A_n = softmax(Q_n K_nᵀ / √d + (1 − mask) · finfo(float32).min) V_n
      a   = LN(h + Dropout(Dense([A_1 .. A_N])))
      h'  = LN(a + Dropout(Dense(act(Dense(a)))))

``act`` is the exact (erf) GELU for ``hidden_act="gelu"``, the tanh GELU for
``gelu_new`` or ReLU; attention probabilities pass through dropout too. The additive
mask is what ``transformers``' eager attention adds (``torch.finfo(float32).min`` at
padding keys), so a query whose keys are all padding attends uniformly, as there.

Precision: ``dtype`` is the compute dtype of the Dense matmuls and attention products
(``bfloat16`` allowed); embeddings, LayerNorm, softmax, residual sums and the output
are float32 (float64 when ``dtype`` is float64); params are float32. Params:
``{"embeddings": {word_embeddings, position_embeddings, token_type_embeddings,
LayerNorm}, "layer_0": {attention: {query, key, value, output, LayerNorm},
intermediate, output, LayerNorm}, ...}``, one Flax module per Hugging Face module.
"""

from __future__ import annotations

from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.models.bert.config import BertConfig
from jitr.models.common import wide_dtype

Dtype = Any
_INIT = nn.initializers.normal(0.02)  # Hugging Face's initializer_range


def _activation(name: str):
  """``hidden_act`` -> function: ``gelu`` exact (erf), ``gelu_new`` tanh, ``relu``."""
  return {
    "gelu": lambda x: jax.nn.gelu(x, approximate=False),
    "gelu_new": lambda x: jax.nn.gelu(x, approximate=True),
    "relu": jax.nn.relu,
  }[name]


def attention_bias(attention_mask: jax.Array, dtype: Dtype = jnp.float32) -> jax.Array:
  """``[B, 1, 1, L]``: 0 at tokens, ``finfo(dtype).min`` at padding keys."""
  keep = jnp.asarray(attention_mask).astype(bool)[:, None, None, :]
  return jnp.where(keep, 0.0, jnp.finfo(dtype).min).astype(dtype)


class BertEmbeddings(nn.Module):
  """``LN(E_word[x] + E_pos[0..L) + E_type[t])``, then dropout: ``[B, L, hidden]``."""

  config: BertConfig
  dtype: Dtype = jnp.float32

  @nn.compact
  def __call__(self, input_ids, token_type_ids, train: bool):
    c, wide = self.config, wide_dtype(self.dtype)
    embed = lambda n, name: nn.Embed(n, c.hidden_size, dtype=wide, embedding_init=_INIT, name=name)
    positions = jnp.arange(input_ids.shape[1])[None, :]
    x = embed(c.vocab_size, "word_embeddings")(input_ids)
    x = x + embed(c.type_vocab_size, "token_type_embeddings")(token_type_ids)
    x = x + embed(c.max_position_embeddings, "position_embeddings")(positions)
    x = nn.LayerNorm(epsilon=c.layer_norm_eps, dtype=wide, name="LayerNorm")(x)
    return nn.Dropout(c.hidden_dropout_prob)(x, deterministic=not train)


class BertAttention(nn.Module):
  """Multi-head self-attention with its output Dense, residual and LayerNorm:
  ``LN(h + Dropout(Dense(concat_n softmax(Q_n K_nᵀ/√d + bias) V_n)))``."""

  config: BertConfig
  dtype: Dtype = jnp.float32

  @nn.compact
  def __call__(self, h, bias, train: bool):
    c, wide = self.config, wide_dtype(self.dtype)
    heads, width = c.num_attention_heads, c.hidden_size // c.num_attention_heads
    dense = lambda n, name: nn.Dense(n, dtype=self.dtype, kernel_init=_INIT, name=name)
    split = lambda y: y.reshape(*y.shape[:2], heads, width)  # [B, L, N, d]
    q, k, v = (split(dense(c.hidden_size, name)(h)) for name in ("query", "key", "value"))
    scores = jnp.einsum("bqnd,bknd->bnqk", q, k).astype(wide) * width**-0.5
    probs = jax.nn.softmax(scores + bias.astype(wide), axis=-1)
    probs = nn.Dropout(c.attention_probs_dropout_prob)(probs, deterministic=not train)
    context = jnp.einsum("bnqk,bknd->bqnd", probs.astype(self.dtype), v)
    out = dense(c.hidden_size, "output")(context.reshape(h.shape)).astype(wide)
    out = nn.Dropout(c.hidden_dropout_prob)(out, deterministic=not train)
    return nn.LayerNorm(epsilon=c.layer_norm_eps, dtype=wide, name="LayerNorm")(h + out)


class BertLayer(nn.Module):
  """One post-LayerNorm layer: attention, then ``LN(a + Dropout(Dense(act(Dense(a)))))``."""

  config: BertConfig
  dtype: Dtype = jnp.float32

  @nn.compact
  def __call__(self, h, bias, train: bool):
    c, wide = self.config, wide_dtype(self.dtype)
    a = BertAttention(c, self.dtype, name="attention")(h, bias, train)
    dense = lambda n, name: nn.Dense(n, dtype=self.dtype, kernel_init=_INIT, name=name)
    y = _activation(c.hidden_act)(dense(c.intermediate_size, "intermediate")(a))
    y = dense(c.hidden_size, "output")(y).astype(wide)
    y = nn.Dropout(c.hidden_dropout_prob)(y, deterministic=not train)
    return nn.LayerNorm(epsilon=c.layer_norm_eps, dtype=wide, name="LayerNorm")(a + y)


class BertEncoder(nn.Module):
  """BERT's last hidden states ``[B, L, hidden]`` (float32; float64 for ``dtype`` float64).

  ``config``: the shape (:func:`~jitr.models.read_config` reads a ``config.json``);
  ``dtype``: the compute dtype of the matmuls (float32 or bfloat16); ``remat``: recompute
  each layer's activations in the backward pass (``nn.remat``).

  ``__call__(input_ids [B, L] int, attention_mask [B, L] (1 / True = token), *,
  train=False, token_type_ids=None)``: ``train`` turns dropout on (rng ``"dropout"``);
  ``token_type_ids`` ``[B, L]`` default to zeros. ``L <= max_position_embeddings``.
  """

  config: BertConfig
  dtype: Dtype = jnp.float32
  remat: bool = False

  @nn.compact
  def __call__(self, input_ids, attention_mask, *, train: bool = False, token_type_ids=None):
    chex.assert_rank(input_ids, 2)
    chex.assert_equal_shape([input_ids, attention_mask])
    c = self.config
    if input_ids.shape[1] > c.max_position_embeddings:
      raise ValueError(
        f"BertEncoder: input_ids has length {input_ids.shape[1]}, expected at most "
        f"max_position_embeddings = {c.max_position_embeddings}"
      )
    if token_type_ids is None:
      token_type_ids = jnp.zeros_like(input_ids)
    chex.assert_equal_shape([input_ids, token_type_ids])
    h = BertEmbeddings(c, self.dtype, name="embeddings")(input_ids, token_type_ids, train)
    bias = attention_bias(attention_mask, jnp.float32)
    layer = nn.remat(BertLayer, static_argnums=(3,)) if self.remat else BertLayer
    for i in range(c.num_hidden_layers):
      h = layer(c, self.dtype, name=f"layer_{i}")(h, bias, train)
    return h
