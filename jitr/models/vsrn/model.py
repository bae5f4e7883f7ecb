"""VSRN: Visual Semantic Reasoning (Li et al., ICCV 2019; code: KunpengLi1994/VSRN).

A dual encoder (``sim = img @ txt.T``) with an auxiliary captioning loss in training.
Following the official ``model.py`` (``EncoderImagePrecompAttn``, ``EncoderText``) and
``GCN_lib/Rs_GCN.py``:

- image ``[B, N, 2048]``: ``x = W_fc v + b`` (Linear 2048 -> D); COCO only: ``l2norm``;
  ``gcn_layers`` (4) ``Rs_GCN`` layers; ``l2norm``; GRU D over the regions in their
  stored order, last state; F30K only: ``BatchNorm1d(D)``; ``l2norm`` over features;
- ``Rs_GCN``: ``θ, φ, g`` are 1×1 convolutions (per-region Linear D -> D),
  ``R = θ(V) φ(V)ᵀ / R_count`` (no softmax), ``V* = BN(W (R g(V))) + V``, with the
  BatchNorm's γ = β = 0 at init, so each layer starts as the identity;
- text: ``Embed 300 -> GRU D``, output at the last valid word, ``l2norm``;
- captioning (training only): :mod:`jitr.models.vsrn.captioner`, fed the GCN regions.

**Which axis the region ``l2norm`` normalises.** The official ``l2norm`` sums over
``dim=1``; on the ``[B, N, D]`` region tensors that is the *region* axis (each
feature is normalised across the image's regions; the author agreed this is
unintended). ``region_l2norm_axis="regions"`` (default) reproduces it;
``"features"`` normalises each region vector instead. The final embeddings
``[B, D]`` are normalised over features either way. ``l2norm`` is
:func:`jitr.losses.l2_normalize` (``x / max(‖x‖, 1e-8)``; the official has no ε).

**Padding** (``image_mask [B, N]``, valid regions first): padded regions are zeroed
before every norm and projection that mixes regions; ``R_count`` is the image's number
of valid regions (officially always 36) and ``R``'s padded columns are 0; the GCN
BatchNorm (channels = D features) takes its batch statistics over the valid (image,
region) positions only; the GRUs stop at the last valid region or word. So padding
never changes an output. The F30K feature BatchNorm normalises over the batch of
images (train: batch statistics, eval: running ones); like every BatchNorm here it
follows PyTorch (momentum 0.1, ε = 1e-5, running variance updated unbiased).

**Training notes (official ``VSRN.train_emb``).** ``loss = retrieval + caption_loss``
(weight 1). The official Adam parameter list holds the captioning ``encoder`` and
``decoder`` twice (directly and inside ``caption_model``): PyTorch then applies two Adam
steps per iteration to them with the same gradient (checked with torch 2.13: identical
to two single steps), and ``clip_grad_norm`` counts their gradients twice. jitr applies
one optax update over one parameter tree: one Adam step for every parameter (documented
in :func:`jitr.training.make_optimizer`; no option reproduces the double step).

**Caption tokens in training** (:func:`jitr.models.retrieval_model.vsrn_model`): the
decoder takes the retrieval batch's own ``tokens`` / ``lengths``. jitr's vocabulary
(:mod:`jitr.data.vocab`) wraps captions as ``<start> w… <end>`` (ids 1 and 2, padding 0,
``lengths`` counting both), as the official data loader does; the official mask also
covers the first padding 0 after ``<end>``, so ``caption_targets`` appends one 0 column
and passes ``lengths + 1``. The caption loss enters the step as the per-pair NLL
``−ll_b`` (``aux_losses["caption"]``), averaged over the valid pairs of the global batch
(the official ``−Σ_b ll_b / B``) and weighted by ``caption_weight``.
"""

from __future__ import annotations

from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.losses.normalize import l2_normalize
from jitr.models.common import official_embedding_init
from jitr.models.gru import GRU
from jitr.models.layers import BatchNormVars, masked_batch_norm, xavier
from jitr.models.vsrn.captioner import (
  VSRNCaptioner,
  caption_log_likelihood_from_log_probs,
  caption_loss_from_log_likelihood,
)

REGION_L2NORM_AXES = {"regions": 1, "features": 2}
"""``region_l2norm_axis`` name -> the axis of ``[B, N, D]`` that the region l2norm sums."""

DATASET_OPTIONS = {
  "coco": dict(fc_l2norm=True, feature_batch_norm=False),
  "f30k": dict(fc_l2norm=False, feature_batch_norm=True),
}
"""The official ``data_name`` switches: COCO l2-normalises the fc output, F30K instead
batch-normalises the GRU state (``f30k_precomp``)."""

BN = dict(momentum=0.1, eps=1e-5)


def vsrn_dataset_options(dataset: str) -> dict[str, bool]:
  """:class:`VSRN` fields that the official code sets from ``data_name``."""
  if dataset not in DATASET_OPTIONS:
    raise ValueError(f"VSRN dataset must be one of {tuple(DATASET_OPTIONS)}, got {dataset!r}")
  return dict(DATASET_OPTIONS[dataset])


def region_l2norm(x: jax.Array, mask: jax.Array, axis_name: str) -> jax.Array:
  """``l2norm`` of ``[B, N, D]`` over ``REGION_L2NORM_AXES[axis_name]`` with padded
  regions set to 0 first (so they neither count nor come out non-zero)."""
  if axis_name not in REGION_L2NORM_AXES:
    raise ValueError(
      f"VSRN region_l2norm_axis must be one of {tuple(REGION_L2NORM_AXES)}, got {axis_name!r}"
    )
  x = jnp.where(mask[..., None], x, jnp.zeros_like(x))
  return l2_normalize(x, axis=REGION_L2NORM_AXES[axis_name])


class RsGCN(nn.Module):
  """One ``Rs_GCN`` layer on ``[B, N, D]``: ``V + BN(W (θφᵀ / R_count) g)`` (masked)."""

  inter_dim: int | None = None
  axis_name: str | None = None
  """Sync BatchNorm: ``W_bn``'s moments are over the rows of every device of this axis."""

  @nn.compact
  def __call__(self, v: jax.Array, mask: jax.Array, train: bool = False) -> jax.Array:
    d = v.shape[-1]
    inter = self.inter_dim or d
    m = mask[..., None]
    zero = lambda a: jnp.where(m, a, jnp.zeros_like(a))  # noqa: E731
    g = zero(nn.Dense(inter, name="g")(v))
    theta = nn.Dense(inter, name="theta")(v)
    phi = zero(nn.Dense(inter, name="phi")(v))
    count = jnp.maximum(jnp.sum(mask, axis=1), 1).astype(v.dtype)[:, None, None]
    relation = jnp.einsum("bic,bjc->bij", theta, phi) / count
    w_y = nn.Dense(d, name="W")(relation @ g)
    bn = BatchNormVars(d, scale_init=nn.initializers.zeros, name="W_bn")  # γ = β = 0
    w_y = masked_batch_norm(
      bn, w_y, m, channel_axis=-1, train=train, axis_name=self.axis_name, **BN
    )
    return zero(w_y + v)


class VSRNImageEncoder(nn.Module):
  """``(images [B, N, img_dim], mask [B, N]) -> (embedding [B, D], GCN regions [B, N, D],
  mask)``; the regions feed the captioning branch (module docstring for the steps)."""

  embed_dim: int = 2048
  gcn_layers: int = 4
  fc_l2norm: bool = True
  feature_batch_norm: bool = False
  region_l2norm_axis: str = "regions"
  dtype: Any = jnp.float32
  axis_name: str | None = None
  """Sync BatchNorm over this data-parallel axis (``Rs_GCN`` and the F30K feature BN)."""

  @nn.compact
  def __call__(self, images: jax.Array, mask: jax.Array | None = None, train: bool = False):
    chex.assert_rank(images, 3)
    if mask is None:
      mask = jnp.ones(images.shape[:2], bool)
    chex.assert_shape(mask, images.shape[:2])
    mask = mask.astype(bool)
    x = nn.Dense(self.embed_dim, kernel_init=xavier, name="fc")(images.astype(self.dtype))
    x = jnp.where(mask[..., None], x, jnp.zeros_like(x))
    if self.fc_l2norm:
      x = region_l2norm(x, mask, self.region_l2norm_axis)
    for k in range(self.gcn_layers):
      x = RsGCN(axis_name=self.axis_name, name=f"Rs_GCN_{k + 1}")(x, mask, train)
    regions = region_l2norm(x, mask, self.region_l2norm_axis)
    _, state = GRU(self.embed_dim, dtype=self.dtype, name="img_rnn")(
      regions, jnp.sum(mask, axis=1).astype(jnp.int32)
    )
    if self.feature_batch_norm:
      bn = BatchNormVars(self.embed_dim, name="bn")
      state = masked_batch_norm(
        bn,
        state,
        jnp.ones_like(state, bool),
        channel_axis=-1,
        train=train,
        axis_name=self.axis_name,
        **BN,
      )
    return l2_normalize(state), regions, mask


class VSRNTextEncoder(nn.Module):
  """``(tokens [B, L], lengths [B]) -> l2norm(GRU(Embed(tokens)) at the last valid word)``."""

  vocab_size: int
  word_dim: int = 300
  embed_dim: int = 2048
  dtype: Any = jnp.float32

  @nn.compact
  def __call__(self, tokens: jax.Array, lengths: jax.Array) -> jax.Array:
    chex.assert_rank([tokens, lengths], [2, 1])
    chex.assert_equal_shape_prefix([tokens, lengths], 1)
    x = nn.Embed(
      self.vocab_size, self.word_dim, embedding_init=official_embedding_init, name="embed"
    )(tokens)
    _, last = GRU(self.embed_dim, dtype=self.dtype, name="rnn")(x, lengths.astype(jnp.int32))
    return l2_normalize(last)


class VSRN(nn.Module):
  """VSRN dual encoder with its captioning branch. Parameter tree (official names):
  ``img_enc/{fc, Rs_GCN_k/{g, theta, phi, W, W_bn}, img_rnn, bn}``, ``txt_enc/{embed,
  rnn}``, ``caption_model/{encoder/{vid2hid, rnn}, decoder/{embedding, attention, rnn,
  out}}``. Methods (``model.apply(variables, ..., method=...)``)::

      encode_image(images, image_mask, train) -> (img [B, D], regions [B, N, D], mask)
      encode_text(tokens, lengths)            -> txt [B, D]
      caption_log_likelihood(regions, region_mask, tokens, lengths, train) -> [B]
      caption_loss(regions, region_mask, tokens, lengths, train)           -> scalar
      __call__(images, image_mask, tokens, lengths, caption_tokens, caption_lengths,
               train) -> (img, txt, caption_loss)

  ``train=True`` needs ``mutable=["batch_stats"]`` and, with dropout, a ``dropout`` rng.
  """

  vocab_size: int
  word_dim: int = 300
  embed_dim: int = 2048
  gcn_layers: int = 4
  fc_l2norm: bool = True
  feature_batch_norm: bool = False
  region_l2norm_axis: str = "regions"
  caption_hidden_dim: int = 512
  caption_word_dim: int = 300
  caption_dropout: float = 0.2
  dtype: Any = jnp.float32
  """Computation dtype of the GRUs and the image input (float64 for gradient checks)."""
  axis_name: str | None = None
  """Sync BatchNorm over this data-parallel axis (``None``: this device's rows only)."""

  def setup(self):
    self.img_enc = VSRNImageEncoder(
      self.embed_dim,
      self.gcn_layers,
      self.fc_l2norm,
      self.feature_batch_norm,
      self.region_l2norm_axis,
      self.dtype,
      self.axis_name,
    )
    self.txt_enc = VSRNTextEncoder(self.vocab_size, self.word_dim, self.embed_dim, self.dtype)
    self.caption_model = VSRNCaptioner(
      self.vocab_size,
      self.caption_hidden_dim,
      self.caption_word_dim,
      self.caption_dropout,
      self.dtype,
    )

  def encode_image(self, images: jax.Array, image_mask: jax.Array | None = None, train=False):
    return self.img_enc(images, image_mask, train)

  def encode_text(self, tokens: jax.Array, lengths: jax.Array) -> jax.Array:
    return self.txt_enc(tokens, lengths)

  def caption_log_likelihood(
    self,
    regions: jax.Array,
    region_mask: jax.Array,
    tokens: jax.Array,
    lengths: jax.Array,
    train: bool = False,
  ) -> jax.Array:
    """``[B]``: ``Σ_{t=1}^{T−1} log p(y_t | y_<t, regions) · [t < lengths]`` (teacher forcing)."""
    log_probs = self.caption_model(regions, region_mask, tokens, train)
    return caption_log_likelihood_from_log_probs(log_probs, tokens, lengths)

  def caption_loss(self, regions, region_mask, tokens, lengths, train: bool = False) -> jax.Array:
    """``LanguageModelCriterion``: ``−Σ_b ll_b / B``."""
    ll = self.caption_log_likelihood(regions, region_mask, tokens, lengths, train)
    return caption_loss_from_log_likelihood(ll)

  def __call__(
    self,
    images: jax.Array,
    image_mask: jax.Array | None,
    tokens: jax.Array,
    lengths: jax.Array,
    caption_tokens: jax.Array,
    caption_lengths: jax.Array,
    train: bool = False,
  ):
    img, regions, mask = self.encode_image(images, image_mask, train)
    txt = self.encode_text(tokens, lengths)
    return img, txt, self.caption_loss(regions, mask, caption_tokens, caption_lengths, train)
