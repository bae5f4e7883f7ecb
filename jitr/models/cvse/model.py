"""CVSE: Consensus-Aware Visual-Semantic Embedding (Wang et al., ECCV 2020; official code
BruceW91/CVSE, ``model_CVSE.py``), as the official ``forward_emb`` computes it.

Instance level (per image / caption)::

    v_r   = l2norm(W_img x_r + b)                    regions [B, R, E]  (EncoderImagePrecomp)
    u_t   = l2norm(mean_dir BiGRU(Drop(Embed(w))))    words [B, L, E]    (EncoderText)
    v     = VisualSelfAttention(v_r)                  memory: mean_r v_r
    u     = TextualSelfAttention(u_t)                 memory: l2norm(mean_t u_t)

Consensus level: the concept features ``Z = ConceptGCN(X, Â)`` [C, E] of the C concepts'
word vectors ``X`` over the normalised concept graph ``Â`` (:mod:`jitr.models.cvse.gcn`;
the same for every image and caption), then per modality (``Consensus_level_feature_learning``)::

    a_bc  = fc3(act(BN1(fc1(Z)))_c ⊙ act(BN2(fc2(e_b))))     e_b: the instance embedding
    p_b   = softmax_c(κ · a_b)                              κ = smooth_coef = 10
    p_b   ← ρ · softmax_c(κ · y_b) + (1 − ρ) · p_b           text only: y_b the concept labels,
                                                            ρ = Concept_label_ratio = 0.35
    c_b   = l2norm(Σ_c p_bc · l2norm(Z_c))

Fusion (``Multi_feature_fusing``, ``weight_sum``): ``f_b = l2norm(α e_b + (1 − α) c_b)`` with
α = 0.85 in training (hard-coded officially); evaluation uses 0.85 for Flickr30K and 0.9
for COCO (``evalrank``), ``eval_fuse_alpha`` here. ``l2norm(x) = x / (sqrt(Σ x²) + 1e-12)``
(``util/utils.py``).

``fc3(g ⊙ h) = Σ_e g_e h_e k_e + b`` is computed as ``(h ⊙ k) · gᵀ + b``: one ``[B, E] x
[E, C]`` product instead of the official ``[B, C, E]`` tensor (the same sum).

The consensus module's branches follow the official ``use_BatchNorm`` / ``activation_type``
table: BatchNorm + tanh (CVSE's setting), tanh, BatchNorm + sigmoid, and neither (where
the official ``embedding_1`` / ``_2`` are ``fc -> Dropout`` without activation).
``BN1`` normalises over the C concepts (the same rows on every device); ``BN2`` over the
batch, synchronised over ``axis_name``. The official forward runs the GCN once per
modality (the same output: it reads no instance); here it runs once per call. The
consensus ``fc`` layers start as in :mod:`!jitr.models.cvse.attention` (kernels
``±1/sqrt(fan_in)``, biases 0); the word embedding starts Xavier-uniform (the official
``random_init``; its default ``glove`` loads torchtext's GloVe, which needs a download).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.losses.normalize import l2_normalize_additive
from jitr.models.cvse.attention import (
  TextualSelfAttention,
  VisualSelfAttention,
  torch_linear_kernel_init,
)
from jitr.models.cvse.gcn import L2NORM_EPS, ConceptGCN
from jitr.models.gru import BiGRU
from jitr.models.layers import BatchNormVars, LinearParams, masked_batch_norm

xavier = nn.initializers.xavier_uniform()


def l2norm(x: jax.Array, axis: int = -1) -> jax.Array:
  """CVSE's ``l2norm``: ``x / (sqrt(Σ x²) + 1e-12)``."""
  return l2_normalize_additive(x, axis=axis, eps=L2NORM_EPS)


class CVSEEmbeddings(NamedTuple):
  """One modality's CVSE outputs for ``B`` rows: the instance, consensus and fused
  embeddings ``[B, E]`` and the concept distribution ``[B, C]`` (text: label-mixed)."""

  instance: jax.Array
  consensus: jax.Array
  fused: jax.Array
  concept_scores: jax.Array


class CVSEImageEncoder(nn.Module):
  """``(images [B, R, F], mask [B, R]) -> l2norm(W x + b)`` [B, R, E]; padded regions 0
  (the official ``EncoderImagePrecomp``, Xavier-uniform kernel, zero bias)."""

  embed_dim: int = 1024

  @nn.compact
  def __call__(self, images: jax.Array, mask: jax.Array) -> jax.Array:
    chex.assert_rank(images, 3)
    x = nn.Dense(self.embed_dim, kernel_init=xavier, name="fc")(images)
    return jnp.where(mask[..., None], l2norm(x), 0.0)


class CVSETextEncoder(nn.Module):
  """``(tokens [B, L], lengths [B]) -> (words [B, L, E], mask [B, L])``: the official
  ``EncoderText`` (embedding, dropout, BiGRU with the two directions averaged, l2norm per
  word); padded words come out 0."""

  vocab_size: int
  word_dim: int = 300
  embed_dim: int = 1024
  dropout: float = 0.4
  dtype: Any = jnp.float32

  @nn.compact
  def __call__(self, tokens: jax.Array, lengths: jax.Array, train: bool = False):
    chex.assert_rank(tokens, 2)
    chex.assert_shape(lengths, tokens.shape[:1])
    lengths = lengths.astype(jnp.int32)
    x = nn.Embed(self.vocab_size, self.word_dim, embedding_init=xavier, name="embed")(tokens)
    x = nn.Dropout(self.dropout, deterministic=not train)(x)
    out, _ = BiGRU(self.embed_dim, merge="mean", dtype=self.dtype, name="rnn")(x, lengths)
    mask = jnp.arange(tokens.shape[1])[None, :] < lengths[:, None]
    return jnp.where(mask[..., None], l2norm(out), 0.0), mask


ACTIVATIONS = {"tanh": jnp.tanh, "sigmoid": jax.nn.sigmoid}


class ConsensusLevel(nn.Module):
  """``(instance [B, E], concepts [C, E], labels [B, C] | None, train) -> (c [B, E],
  p [B, C])``: the official ``Consensus_level_feature_learning`` (module docstring).
  ``labels`` given: the textual mix with ratio ``label_ratio``; ``None``: the visual one."""

  embed_dim: int = 1024
  use_bn: bool = True
  activation_type: str = "tanh"
  dropout: float = 0.4
  smooth_coef: float = 10.0
  label_ratio: float = 0.35
  momentum: float = 0.1
  eps: float = 1e-5
  axis_name: str | None = None

  def _embed(self, x: jax.Array, name: str, train: bool, axis_name: str | None) -> jax.Array:
    x = nn.Dense(self.embed_dim, kernel_init=torch_linear_kernel_init, name=f"fc{name}")(x)
    if not self.use_bn and self.activation_type == "sigmoid":  # official: fc -> Dropout
      return nn.Dropout(self.dropout, deterministic=not train)(x)
    if self.use_bn:
      bn = BatchNormVars(self.embed_dim, name=f"bn{name}")
      x = masked_batch_norm(
        bn,
        x,
        jnp.ones_like(x, bool),
        channel_axis=-1,
        train=train,
        momentum=self.momentum,
        eps=self.eps,
        axis_name=axis_name,
      )
    return ACTIVATIONS[self.activation_type](x)

  @nn.compact
  def __call__(
    self,
    instance: jax.Array,
    concepts: jax.Array,
    labels: jax.Array | None = None,
    train: bool = False,
  ) -> tuple[jax.Array, jax.Array]:
    if self.activation_type not in ACTIVATIONS:
      raise ValueError(
        f"ConsensusLevel: activation_type must be one of {sorted(ACTIVATIONS)}, "
        f"got {self.activation_type!r}"
      )
    chex.assert_rank([instance, concepts], 2)
    w_s = self._embed(concepts, "1", train, None)  # the C concepts: the same on every device
    w_m = self._embed(instance, "2", train, self.axis_name)
    kernel, bias = LinearParams(
      self.embed_dim, 1, kernel_init=torch_linear_kernel_init, name="fc3"
    )()
    logits = jnp.einsum("be,ce->bc", w_m * kernel[:, 0], w_s) + bias[0]
    scores = jax.nn.softmax(logits * self.smooth_coef, axis=-1)
    if labels is not None:
      chex.assert_shape(labels, scores.shape)
      label_scores = jax.nn.softmax(labels.astype(scores.dtype) * self.smooth_coef, axis=-1)
      scores = self.label_ratio * label_scores + (1.0 - self.label_ratio) * scores
    return l2norm(scores @ l2norm(concepts)), scores


def fuse(instance: jax.Array, consensus: jax.Array, alpha: float) -> jax.Array:
  """``l2norm(α · instance + (1 − α) · consensus)`` (``weight_sum`` fusion)."""
  return l2norm(alpha * instance + (1.0 - alpha) * consensus)


class CVSE(nn.Module):
  """The CVSE network (module docstring). The concept word vectors ``[C, D]`` and the
  normalised adjacency ``[C, C]`` are inputs (constants of a dataset, not parameters).

  Methods: :meth:`concept_features`, :meth:`embed_image`, :meth:`embed_text` and
  ``__call__`` (both sides, the GCN run once).
  """

  vocab_size: int
  img_dim: int = 2048
  word_dim: int = 300
  embed_dim: int = 1024
  num_region: int = 36
  use_bn: bool = True
  activation_type: str = "tanh"
  dropout: float = 0.4
  smooth_coef: float = 10.0
  label_ratio: float = 0.35
  fuse_alpha: float = 0.85
  eval_fuse_alpha: float | None = None
  """α at evaluation (``None``: ``fuse_alpha``); the official evaluation uses 0.85 (F30K)
  and 0.9 (COCO)."""
  axis_name: str | None = None
  dtype: Any = jnp.float32
  """Computation dtype of the BiGRU (float64 for gradient checks)."""

  def setup(self):
    self.img_enc = CVSEImageEncoder(self.embed_dim)
    self.txt_enc = CVSETextEncoder(
      self.vocab_size, self.word_dim, self.embed_dim, self.dropout, self.dtype
    )
    self.visual_attention = VisualSelfAttention(
      self.embed_dim,
      self.num_region,
      self.use_bn,
      self.activation_type,
      self.dropout,
      axis_name=self.axis_name,
    )
    self.textual_attention = TextualSelfAttention(
      self.embed_dim, self.activation_type, self.dropout
    )
    self.gcn = ConceptGCN(self.embed_dim)
    consensus = dict(
      embed_dim=self.embed_dim,
      use_bn=self.use_bn,
      activation_type=self.activation_type,
      dropout=self.dropout,
      smooth_coef=self.smooth_coef,
      label_ratio=self.label_ratio,
      axis_name=self.axis_name,
    )
    self.visual_consensus = ConsensusLevel(**consensus)
    self.textual_consensus = ConsensusLevel(**consensus)

  def _alpha(self, train: bool) -> float:
    if train or self.eval_fuse_alpha is None:
      return self.fuse_alpha
    return self.eval_fuse_alpha

  def concept_features(self, vectors: jax.Array, adjacency: jax.Array) -> jax.Array:
    """``Z = ConceptGCN(X, Â)`` [C, E]."""
    chex.assert_rank([vectors, adjacency], 2)
    return self.gcn(jnp.asarray(vectors), jnp.asarray(adjacency))

  def image_from_concepts(
    self, images: jax.Array, mask: jax.Array | None, concepts: jax.Array, train: bool = False
  ) -> CVSEEmbeddings:
    if mask is None:
      mask = jnp.ones(images.shape[:2], bool)
    regions = self.img_enc(images, mask)
    instance, _ = self.visual_attention(regions, mask, None, train)
    consensus, scores = self.visual_consensus(instance, concepts, None, train)
    return CVSEEmbeddings(
      instance, consensus, fuse(instance, consensus, self._alpha(train)), scores
    )

  def text_from_concepts(
    self,
    tokens: jax.Array,
    lengths: jax.Array,
    labels: jax.Array | None,
    concepts: jax.Array,
    train: bool = False,
  ) -> CVSEEmbeddings:
    words, mask = self.txt_enc(tokens, lengths, train)
    instance, _ = self.textual_attention(words, mask, None, train)
    if labels is None:
      labels = jnp.zeros((tokens.shape[0], concepts.shape[0]), concepts.dtype)
    consensus, scores = self.textual_consensus(instance, concepts, labels, train)
    return CVSEEmbeddings(
      instance, consensus, fuse(instance, consensus, self._alpha(train)), scores
    )

  def embed_image(self, images, mask, vectors, adjacency, train: bool = False) -> CVSEEmbeddings:
    """An image batch's :class:`CVSEEmbeddings`."""
    return self.image_from_concepts(images, mask, self.concept_features(vectors, adjacency), train)

  def embed_text(
    self, tokens, lengths, labels, vectors, adjacency, train: bool = False
  ) -> CVSEEmbeddings:
    """A caption batch's :class:`CVSEEmbeddings`; ``labels [B, C]`` its concept labels
    (``None``: all zero, the label part of the mix is then uniform)."""
    concepts = self.concept_features(vectors, adjacency)
    return self.text_from_concepts(tokens, lengths, labels, concepts, train)

  def __call__(
    self, images, mask, tokens, lengths, labels, vectors, adjacency, train: bool = False
  ) -> tuple[CVSEEmbeddings, CVSEEmbeddings]:
    concepts = self.concept_features(vectors, adjacency)
    return (
      self.image_from_concepts(images, mask, concepts, train),
      self.text_from_concepts(tokens, lengths, labels, concepts, train),
    )
