"""CVSE's instance-level self-attention (official ``model_CVSE.py``: ``V_single_modal_atten``,
``T_single_modal_atten``; Wang et al., ECCV 2020, code: BruceW91/CVSE).

Each module pools local features ``x_t`` [B, N, D] (regions or words) into one vector
under the guidance of a *memory* ``m`` [B, D]::

    W_x   = Drop(act(BN1(fc1(x_t))))            (BN1 only in the visual module)
    W_m   = Drop(act(BN2(fc2(m))))
    a_t   = fc3(W_x ⊙ W_m)                      (one logit per region / word)
    w     = softmax_t(a_t)
    x_att = l2norm(Σ_t w_t x_t)                 l2norm(x) = x / (sqrt(Σ x²) + 1e-12)

The configuration CVSE builds (``train_f30k.py`` / ``train_coco.py`` defaults) is
``use_BatchNorm=True`` (an ``action='store_false'`` flag), ``activation_type='tanh'``,
``dropout_rate=0.4``, ``img_region_num=36`` and ``image_dim = embed_dim = embed_size``; the
defaults here. The memories are the official encoders' means: the visual one is
``mean_r v_r`` of the l2-normalised regions (not normalised again), the textual one
``l2norm(mean_t u_t)`` of the l2-normalised words. With ``memory=None`` the modules compute
them from ``local``.

``BatchNorm1d(img_region_num)`` in the visual ``embedding_1`` sees ``[B, R, E]``: the
*region index is the channel* (statistics of region slot r over the batch and the E
features), as in SGRAF's ``VisualSA``; it reuses :func:`!jitr.models.layers.masked_batch_norm`
and :class:`!jitr.models.layers.BatchNormVars` (torch's momentum 0.1, unbiased running
variance, eps 1e-5). ``BatchNorm1d(embed_dim)`` on the memory is the ordinary one.

The other official branches are reproduced too: ``use_bn=False, 'tanh'`` (where the
official ``embedding_3`` is ``fc3 -> tanh -> Dropout``), ``use_bn=True, 'sigmoid'`` and
``use_bn=False, 'sigmoid'`` (where only the unused-in-CVSE ``embedding_2_2`` keeps its
BatchNorm). Other activations are refused with a ``ValueError`` (the official visual module
silently falls into its sigmoid branch, the textual one fails).

Official quirks kept: the visual module embeds the memory with ``embedding_2`` when its
width equals the regions' and with ``embedding_2_2`` (``fc2_2``: ``embed_dim -> embed_dim``)
otherwise; since CVSE's memory is the regions' mean, only ``embedding_2`` ever runs there
(``fc2_2`` params are created here only when that branch runs). The official ``fc4`` is
declared and never called: it has no counterpart. Linear kernels start as torch's default
(uniform ``±1/sqrt(fan_in)``), biases at 0.

Padding (jitr's addition): the official code has no region mask (always 36 regions) and
its textual softmax runs over all ``max_len`` positions, the padded words being the zeros
of ``pad_packed_sequence``; with ``mask=None`` that is what is computed here (every
position valid). With a mask ``[B, N]``, padded positions get weight 0, and are left out
of the memory's mean and of the region BatchNorm's statistics, so they never change the
output. (Officially the padded zero words take some softmax weight but add nothing to the
sum, and the final l2norm removes the resulting scale: the official pooled vector equals
the masked one up to the 1e-12 eps; its attention weights do not.) A batch may have at most
``num_region`` region slots (slot r uses BatchNorm channel r).
"""

from __future__ import annotations

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.losses.normalize import l2_normalize_additive
from jitr.models.cvse.gcn import L2NORM_EPS
from jitr.models.layers import BatchNormVars, masked_batch_norm
from jitr.models.masked_ops import masked_mean, masked_softmax

ACTIVATIONS = {"tanh": jnp.tanh, "sigmoid": jax.nn.sigmoid}

torch_linear_kernel_init = nn.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform")


def _activation(module: str, activation_type: str):
  if activation_type not in ACTIVATIONS:
    raise ValueError(
      f"{module}: activation_type must be one of {sorted(ACTIVATIONS)}, got {activation_type!r}"
    )
  return ACTIVATIONS[activation_type]


def _mask_or_ones(local: jax.Array, mask: jax.Array | None) -> jax.Array:
  if mask is None:
    return jnp.ones(local.shape[:2], bool)
  chex.assert_shape(mask, local.shape[:2])
  return mask.astype(bool)


def _pool(local: jax.Array, logits: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
  weights = masked_softmax(logits, mask, axis=1)
  pooled = jnp.einsum("bn,bnd->bd", weights, local)
  return l2_normalize_additive(pooled, axis=-1, eps=L2NORM_EPS), weights


def _dense(features: int, name: str) -> nn.Dense:
  return nn.Dense(features, kernel_init=torch_linear_kernel_init, name=name)


class VisualSelfAttention(nn.Module):
  """``(regions [B, R, D], mask [B, R] | None, memory [B, D'] | None, train) ->
  (pooled [B, D], weights [B, R])``: the official ``V_single_modal_atten`` (module
  docstring). ``memory=None``: the (masked) mean of ``regions``. Train mode uses batch
  statistics (and updates ``batch_stats``) and dropout (rng ``'dropout'``)."""

  embed_dim: int = 1024
  num_region: int = 36
  use_bn: bool = True
  activation_type: str = "tanh"
  dropout: float = 0.4
  momentum: float = 0.1
  eps: float = 1e-5
  axis_name: str | None = None
  """The data-parallel axis: both BatchNorms' batch moments are over every device's rows."""

  @nn.compact
  def __call__(
    self,
    regions: jax.Array,
    mask: jax.Array | None = None,
    memory: jax.Array | None = None,
    train: bool = False,
  ) -> tuple[jax.Array, jax.Array]:
    act = _activation("VisualSelfAttention", self.activation_type)
    chex.assert_rank(regions, 3)
    if regions.shape[1] > self.num_region:
      raise ValueError(
        f"VisualSelfAttention: at most num_region={self.num_region} region slots "
        f"(BatchNorm1d({self.num_region})), got {regions.shape[1]}"
      )
    mask = _mask_or_ones(regions, mask)
    if memory is None:
      memory = masked_mean(regions, mask[..., None], axis=1)
    chex.assert_rank(memory, 2)
    drop = nn.Dropout(self.dropout, deterministic=not train)
    bn = dict(train=train, momentum=self.momentum, eps=self.eps, axis_name=self.axis_name)
    all_rows = lambda x: jnp.ones_like(x, bool)

    w_v = _dense(self.embed_dim, "fc1")(regions)
    if self.use_bn:
      w_v = masked_batch_norm(
        BatchNormVars(self.num_region, name="bn1"), w_v, mask[..., None], channel_axis=1, **bn
      )
    w_v = drop(act(w_v))

    if memory.shape[-1] == regions.shape[-1]:
      w_m = _dense(self.embed_dim, "fc2")(memory)
      if self.use_bn:
        w_m = masked_batch_norm(
          BatchNormVars(self.embed_dim, name="bn2"), w_m, all_rows(w_m), channel_axis=-1, **bn
        )
    else:  # official embedding_2_2: keeps its BatchNorm in every branch but use_bn=False, tanh
      w_m = _dense(self.embed_dim, "fc2_2")(memory)
      if self.use_bn or self.activation_type == "sigmoid":
        w_m = masked_batch_norm(
          BatchNormVars(self.embed_dim, name="bn2_2"), w_m, all_rows(w_m), channel_axis=-1, **bn
        )
    w_m = drop(act(w_m))

    logits = _dense(1, "fc3")(w_v * w_m[:, None])[..., 0]
    if not self.use_bn and self.activation_type == "tanh":  # official: fc3 -> Tanh -> Dropout
      logits = drop(jnp.tanh(logits))
    return _pool(regions, logits, mask)


class TextualSelfAttention(nn.Module):
  """``(words [B, L, D], mask [B, L] | None, memory [B, D] | None, train) ->
  (pooled [B, D], weights [B, L])``: the official ``T_single_modal_atten`` (no BatchNorm
  in any branch). ``memory=None``: ``l2norm`` of the (masked) mean of ``words``."""

  embed_dim: int = 1024
  activation_type: str = "tanh"
  dropout: float = 0.4

  @nn.compact
  def __call__(
    self,
    words: jax.Array,
    mask: jax.Array | None = None,
    memory: jax.Array | None = None,
    train: bool = False,
  ) -> tuple[jax.Array, jax.Array]:
    act = _activation("TextualSelfAttention", self.activation_type)
    chex.assert_rank(words, 3)
    mask = _mask_or_ones(words, mask)
    if memory is None:
      memory = l2_normalize_additive(
        masked_mean(words, mask[..., None], axis=1), axis=-1, eps=L2NORM_EPS
      )
    chex.assert_rank(memory, 2)
    drop = nn.Dropout(self.dropout, deterministic=not train)
    w_u = drop(act(_dense(self.embed_dim, "fc1")(words)))
    w_m = drop(act(_dense(self.embed_dim, "fc2")(memory)))
    logits = _dense(1, "fc3")(w_u * w_m[:, None])[..., 0]
    return _pool(words, logits, mask)
