"""VSRN's captioning branch (training only): a region GRU encoder and an attention GRU
decoder with teacher forcing (official ``models/EncoderRNN.py``, ``Attention.py``,
``DecoderRNN.py``, ``S2VTAttModel.py``; ``misc/utils.LanguageModelCriterion``).

Encoder (``vid2hid``)::

    e_r = GRU(Dropout_p(W_v v_r + b_v))                      r = 1..N, hidden H = 512

Decoder, step t = 0..T−2 with ``h_0`` = the encoder's last state::

    a_r = w_2ᵀ tanh(W_1 [e_r ; h_t] + b_1)      α = softmax_r(a)     c_t = Σ_r α_r e_r
    h_{t+1} = GRU_cell(Dropout_p([E(y_t) ; c_t]), h_t)
    log p(· | y_≤t) = log_softmax(W_o h_{t+1} + b_o)

Loss (``LanguageModelCriterion``): ``Σ_{b,t≥1} −log p(y_{b,t}) · m_{b,t} / B`` with
``m_{b,t} = [t < lengths_b]``. The official mask covers ``<start> w… <end>`` *and the
first padding 0* after it (``mask[:first_zero + 1] = 1``), so to reproduce it pass
``lengths = len(<start> w… <end>) + 1``. Padded regions (``region_mask``, valid ones
first) are skipped by the encoder GRU and get attention weight 0.
"""

from __future__ import annotations

from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.models.common import lengths_to_mask
from jitr.models.gru import GRU, gru_scan
from jitr.models.layers import LinearParams, xavier
from jitr.models.masked_ops import masked_softmax

xavier_normal = nn.initializers.xavier_normal()  # the official init of vid2hid and out


class GRUCellParams(nn.Module):
  """The parameter tree of :class:`jitr.models.gru.GRU` (``input/{kernel, bias}``,
  ``recurrent_kernel``, ``recurrent_bias``), returned as arrays for a step-by-step scan."""

  in_features: int
  hidden_size: int

  @nn.compact
  def __call__(self) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    h = self.hidden_size
    w_i, b_i = LinearParams(self.in_features, 3 * h, name="input")()
    w_h = self.param("recurrent_kernel", nn.initializers.orthogonal(), (h, 3 * h))
    b_h = self.param("recurrent_bias", nn.initializers.zeros, (3 * h,))
    return w_i, b_i, w_h, b_h


class KernelParams(nn.Module):
  """A bias-free Linear layer's ``kernel [in, out]``."""

  in_features: int
  features: int

  @nn.compact
  def __call__(self) -> jax.Array:
    return self.param("kernel", xavier, (self.in_features, self.features))


class AttentionParams(nn.Module):
  """``linear1`` (``[2H, H]`` kernel over ``[e_r ; h]``, bias) and ``linear2`` (``[H, 1]``,
  no bias) of the official additive ``Attention``."""

  hidden_size: int

  @nn.compact
  def __call__(self) -> tuple[jax.Array, jax.Array, jax.Array]:
    h = self.hidden_size
    w1, b1 = LinearParams(2 * h, h, name="linear1")()
    return w1, b1, KernelParams(h, 1, name="linear2")()


def _dropout(x: jax.Array, key: jax.Array | None, rate: float) -> jax.Array:
  """Inverted dropout ``x · Bernoulli(1 − rate) / (1 − rate)``; identity without a key."""
  if key is None or rate == 0.0:
    return x
  keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
  return jnp.where(keep, x / (1.0 - rate), jnp.zeros_like(x))


class CaptionEncoder(nn.Module):
  """``regions [B, N, D] -> (outputs [B, N, H], last state [B, H])``:
  ``GRU(Dropout(vid2hid(v)))`` over the valid regions (valid ones first)."""

  hidden_size: int = 512
  dropout: float = 0.2
  dtype: Any = jnp.float32

  @nn.compact
  def __call__(self, regions: jax.Array, region_mask: jax.Array, train: bool = False):
    x = nn.Dense(self.hidden_size, kernel_init=xavier_normal, name="vid2hid")(regions)
    x = nn.Dropout(self.dropout, deterministic=not train)(x)
    return GRU(self.hidden_size, dtype=self.dtype, name="rnn")(
      x, jnp.sum(region_mask, axis=1).astype(jnp.int32)
    )


class AttentionDecoder(nn.Module):
  """Teacher-forced attention GRU decoder: ``log p [B, T−1, V]`` of ``tokens[:, 1:]``
  given ``tokens[:, :-1]`` (module docstring for the equations)."""

  vocab_size: int
  hidden_size: int = 512
  word_dim: int = 300
  dropout: float = 0.2

  @nn.compact
  def __call__(
    self,
    enc_out: jax.Array,
    enc_mask: jax.Array,
    h0: jax.Array,
    tokens: jax.Array,
    train: bool = False,
  ) -> jax.Array:
    h = self.hidden_size
    words = nn.Embed(self.vocab_size, self.word_dim, name="embedding")(tokens[:, :-1])
    w1, b1, w2 = AttentionParams(h, name="attention")()
    w_i, b_i, w_h, b_h = GRUCellParams(self.word_dim + h, h, name="rnn")()
    h0 = h0.astype(w_h.dtype)
    keys = enc_out @ w1[:h] + b1  # the encoder half of linear1, once for all steps
    steps = words.shape[1]
    use_dropout = train and self.dropout > 0.0
    rngs = jax.random.split(self.make_rng("dropout"), steps) if use_dropout else None
    valid = jnp.ones((enc_out.shape[0], 1), bool)

    def step(hid, inputs):
      word, key = inputs
      scores = (jnp.tanh(keys + (hid @ w1[h:])[:, None, :]) @ w2)[..., 0]
      alpha = masked_softmax(scores, enc_mask, axis=-1)
      context = jnp.einsum("bn,bnh->bh", alpha, enc_out)
      x = _dropout(jnp.concatenate([word, context], axis=-1), key, self.dropout)
      _, new = gru_scan((x @ w_i + b_i)[:, None], valid, w_h, b_h, hid)
      return new, new

    xs = (jnp.swapaxes(words, 0, 1), rngs)
    _, states = jax.lax.scan(step, h0, xs, length=steps)
    logits = nn.Dense(self.vocab_size, kernel_init=xavier_normal, name="out")(
      jnp.swapaxes(states, 0, 1)
    )
    return jax.nn.log_softmax(logits, axis=-1)


class VSRNCaptioner(nn.Module):
  """``S2VTAttModel``: :class:`!CaptionEncoder` (``encoder``) + :class:`!AttentionDecoder`
  (``decoder``). ``__call__`` returns the per-step log-probabilities ``[B, T−1, V]``."""

  vocab_size: int
  hidden_size: int = 512
  word_dim: int = 300
  dropout: float = 0.2
  dtype: Any = jnp.float32

  @nn.compact
  def __call__(
    self, regions: jax.Array, region_mask: jax.Array, tokens: jax.Array, train: bool = False
  ) -> jax.Array:
    chex.assert_rank([regions, region_mask, tokens], [3, 2, 2])
    chex.assert_equal_shape_prefix([regions, region_mask], 2)
    enc_out, enc_last = CaptionEncoder(self.hidden_size, self.dropout, self.dtype, name="encoder")(
      regions, region_mask, train
    )
    decoder = AttentionDecoder(
      self.vocab_size, self.hidden_size, self.word_dim, self.dropout, name="decoder"
    )
    return decoder(enc_out, region_mask, enc_last, tokens, train)


def caption_log_likelihood_from_log_probs(
  log_probs: jax.Array, tokens: jax.Array, lengths: jax.Array
) -> jax.Array:
  """``ll_b = Σ_{t=1}^{T−1} log p_{b,t−1}(y_{b,t}) · [t < lengths_b]`` -> ``[B]``."""
  chex.assert_rank([log_probs, tokens, lengths], [3, 2, 1])
  targets = tokens[:, 1:]
  picked = jnp.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]
  mask = lengths_to_mask(lengths, tokens.shape[1])[:, 1:]
  return jnp.sum(jnp.where(mask, picked, 0.0), axis=1)


def caption_loss_from_log_likelihood(log_likelihood: jax.Array) -> jax.Array:
  """``LanguageModelCriterion``: masked NLL summed, divided by the batch size."""
  return -jnp.sum(log_likelihood) / log_likelihood.shape[0]
