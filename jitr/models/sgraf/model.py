"""SGR and SAF similarity models (Diao et al., AAAI 2021; code: Paranioar/SGRAF).

A *similarity model* scores every (image, caption) pair with cross-attention
instead of a dot product of two embeddings. Interface (``model.apply(variables,
..., method=...)``)::

    encode_image(images [B, R, 2048], image_mask [B, R]) -> (regions [B, R, D], region_mask)
    encode_text(tokens [B, L], lengths [B], train)       -> (words [B, L, D], word_mask)
    score(regions, region_mask, words, word_mask, train) -> sim [N_img, N_txt]

Following the official ``model.py``:
- image: ``v_r = l2norm(W x_r + b)`` (Linear 2048 -> 1024);
- text: ``Embed 300 -> Dropout 0.4 -> BiGRU 1024`` (directions averaged) -> l2norm;
- globals (inside ``score``): ``VisualSA`` / ``TextSA`` self-attention pooling, each
  ``Linear -> [BatchNorm] -> tanh -> Dropout 0.4`` on the locals and on their mean,
  ``w = softmax(W_c (l ⊙ g))``, global ``= l2norm(Σ w · local)``;
- pairs: :mod:`jitr.models.sgraf.head` (SCAN attention λ = 9, similarity nodes,
  SGR or SAF, ``sigmoid(Linear 256 -> 1)``), scored ``block_size`` captions at a time.

Padding never changes a score: every softmax, mean, norm and batch statistic is
masked. ``VisualSA``'s ``BatchNorm1d(36)`` normalises ``[B, 36, 1024]`` with the
*region index as channel* (statistics of region slot r over the batch and the
1024 features); with variable region counts, slot r's statistics use only images
whose slot r is valid (a slot valid in no image keeps its running statistics),
and a batch may have at most ``num_region`` slots (slot r uses channel r's
parameters). SGRAF is the mean of a trained SGR's and a trained SAF's ``sim``:
:func:`sgraf_similarity`.
"""

from __future__ import annotations

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.models.common import official_embedding_init
from jitr.models.gru import BiGRU
from jitr.models.layers import BatchNormVars, LinearParams, masked_batch_norm, xavier
from jitr.models.masked_ops import (
  l2norm,
  masked_mean,
  masked_softmax,
  unbiased,
)
from jitr.models.sgraf.head import (
  BatchNormState,
  Linear,
  PairBlocks,
  score_all_pairs,
  sequential_running_update,
)


class SGRAFImageEncoder(nn.Module):
  """``(images [B, R, img_dim], mask [B, R]) -> (l2norm(W x + b) [B, R, D], mask)``;
  padded regions come out 0."""

  embed_dim: int = 1024

  @nn.compact
  def __call__(self, images: jax.Array, mask: jax.Array | None = None):
    chex.assert_rank(images, 3)
    if mask is None:
      mask = jnp.ones(images.shape[:2], bool)
    chex.assert_shape(mask, images.shape[:2])
    x = nn.Dense(self.embed_dim, kernel_init=xavier, name="fc")(images.astype(jnp.float32))
    return l2norm(x, mask=mask[..., None]), mask


class SGRAFTextEncoder(nn.Module):
  """``(tokens [B, L], lengths [B]) -> (l2norm(BiGRU(Dropout(Embed(tokens)))) [B, L, D], mask)``
  with the two GRU directions averaged (``use_bi_gru``); padded words come out 0."""

  vocab_size: int
  word_dim: int = 300
  embed_dim: int = 1024
  dropout: float = 0.4

  @nn.compact
  def __call__(self, tokens: jax.Array, lengths: jax.Array, train: bool = False):
    chex.assert_rank(tokens, 2)
    chex.assert_shape(lengths, tokens.shape[:1])
    lengths = lengths.astype(jnp.int32)
    x = nn.Embed(
      self.vocab_size, self.word_dim, embedding_init=official_embedding_init, name="embed"
    )(tokens)
    x = nn.Dropout(self.dropout, deterministic=not train)(x)
    out, _ = BiGRU(self.embed_dim, merge="mean", name="cap_rnn")(x, lengths)
    mask = jnp.arange(tokens.shape[1])[None, :] < lengths[:, None]
    return l2norm(out, mask=mask[..., None]), mask


class VisualSA(nn.Module):
  """Global image vector by self-attention over its regions (masked)."""

  embed_dim: int = 1024
  num_region: int = 36
  dropout: float = 0.4
  momentum: float = 0.1
  eps: float = 1e-5

  @nn.compact
  def __call__(self, local: jax.Array, mask: jax.Array, train: bool = False) -> jax.Array:
    if local.shape[1] > self.num_region:
      raise ValueError(
        f"VisualSA: at most num_region={self.num_region} region slots "
        f"(BatchNorm1d({self.num_region})), got {local.shape[1]}"
      )
    drop = nn.Dropout(self.dropout, deterministic=not train)
    bn = dict(train=train, momentum=self.momentum, eps=self.eps)
    l_emb = nn.Dense(self.embed_dim, kernel_init=xavier, name="embedding_local")(local)
    l_emb = masked_batch_norm(
      BatchNormVars(self.num_region, name="bn_local"), l_emb, mask[..., None], channel_axis=1, **bn
    )
    l_emb = drop(jnp.tanh(l_emb))
    raw_global = masked_mean(local, mask[..., None], axis=1)
    g_emb = nn.Dense(self.embed_dim, kernel_init=xavier, name="embedding_global")(raw_global)
    g_emb = masked_batch_norm(
      BatchNormVars(self.embed_dim, name="bn_global"),
      g_emb,
      jnp.ones_like(g_emb, bool),
      channel_axis=-1,
      **bn,
    )
    g_emb = drop(jnp.tanh(g_emb))
    logits = nn.Dense(1, kernel_init=xavier, name="embedding_common")(l_emb * g_emb[:, None])
    weights = masked_softmax(logits[..., 0], mask, axis=1)
    return l2norm(jnp.einsum("br,brd->bd", weights, local))


class TextSA(nn.Module):
  """Global caption vector by self-attention over its valid words (no BatchNorm)."""

  embed_dim: int = 1024
  dropout: float = 0.4

  @nn.compact
  def __call__(self, local: jax.Array, mask: jax.Array, train: bool = False) -> jax.Array:
    drop = nn.Dropout(self.dropout, deterministic=not train)
    l_emb = drop(
      jnp.tanh(nn.Dense(self.embed_dim, kernel_init=xavier, name="embedding_local")(local))
    )
    raw_global = masked_mean(local, mask[..., None], axis=1)
    g_emb = nn.Dense(self.embed_dim, kernel_init=xavier, name="embedding_global")(raw_global)
    g_emb = drop(jnp.tanh(g_emb))
    logits = nn.Dense(1, kernel_init=xavier, name="embedding_common")(l_emb * g_emb[:, None])
    weights = masked_softmax(logits[..., 0], mask, axis=1)
    return l2norm(jnp.einsum("bt,btd->bd", weights, local))


class GraphReasoningParams(nn.Module):
  """One SGR step's weights: ``graph_query_w``, ``graph_key_w``, ``sim_graph_w``."""

  sim_dim: int

  @nn.compact
  def __call__(self) -> dict[str, Linear]:
    s = self.sim_dim
    names = ("graph_query_w", "graph_key_w", "sim_graph_w")
    return {w: LinearParams(s, s, name=w)() for w in names}


class AttentionFiltrationParams(nn.Module):
  """SAF's weights: ``attn_sim_w`` (Linear sim_dim -> 1) and ``bn`` (BatchNorm1d(1))."""

  sim_dim: int

  @nn.compact
  def __call__(self):
    return LinearParams(self.sim_dim, 1, name="attn_sim_w")(), BatchNormVars(1, name="bn")()


def _sgr_params(head: nn.Module) -> tuple[dict, None]:
  steps = [
    GraphReasoningParams(head.sim_dim, name=f"SGR_module_{k}")() for k in range(head.sgr_step)
  ]
  return {"SGR_module": steps}, None


def _saf_params(head: nn.Module) -> tuple[dict, tuple]:
  attn, (scale, bias, mean, var) = AttentionFiltrationParams(head.sim_dim, name="SAF_module")()
  bn = BatchNormState(scale, bias, jnp.asarray(mean.value), jnp.asarray(var.value))
  return {"SAF_module": {"attn_sim_w": attn, "bn": bn}}, (mean, var)


# module name -> declares its weights (and returns running-stat variables to update)
MODULE_PARAMS = {"SGR": _sgr_params, "SAF": _saf_params}
SIMILARITY_MODULES = tuple(MODULE_PARAMS)


class SGRAFSimilarity(nn.Module):
  """``(regions [I, R, D], region_mask, words [N, L, D], word_mask, train) -> sim [I, N]``:
  the official ``EncoderSimilarity`` (``module`` ``'SGR'`` or ``'SAF'``).

  The globals are computed once per image / caption; the pairs are scored
  ``block_size`` captions at a time against all images, in length buckets, rematerialised
  in the backward pass (:func:`!jitr.models.sgraf.head.score_all_pairs`). XLA
  ``memory_analysis`` of the whole jitted SGR train step, 128 images x 128 captions, 36
  regions, 8-16 words, dims 1024 / 256 (CPU, ``scripts/bench_train.py --memory_only``):
  1.23 GiB at the defaults (blocks of 8, 8 length buckets), 1.61 GiB at blocks of 16,
  28.28 GiB storing every activation (``remat="none"``).
  With captions split over devices, give each device all (gathered) images and
  its own captions: VisualSA's statistics are over all images and SAF's are per
  caption over all images, so only SAF's running-statistic update (sequential
  over captions) needs the gathered per-caption moments.
  """

  embed_dim: int = 1024
  sim_dim: int = 256
  module: str = "SGR"
  sgr_step: int = 3
  num_region: int = 36
  smooth: float = 9.0
  dropout: float = 0.4
  block_size: int = 8
  remat: str = "full"
  length_buckets: int = 8
  momentum: float = 0.1
  eps: float = 1e-5
  axis_name: str | None = None
  """With captions split over this axis (each device: all images, its captions), SAF's
  per-caption moments are all-gathered (global caption order) before the running update."""

  def _head(self) -> tuple[dict, tuple | None]:
    d, s = self.embed_dim, self.sim_dim
    head = {
      "sim_tranloc_w": LinearParams(d, s, name="sim_tranloc_w")(),
      "sim_tranglo_w": LinearParams(d, s, name="sim_tranglo_w")(),
      "sim_eval_w": LinearParams(s, 1, name="sim_eval_w")(),
    }
    extra, running = MODULE_PARAMS[self.module](self)
    return {**head, **extra}, running

  @nn.compact
  def __call__(
    self,
    regions: jax.Array,
    region_mask: jax.Array,
    words: jax.Array,
    word_mask: jax.Array,
    train: bool = False,
  ) -> jax.Array:
    if self.module not in SIMILARITY_MODULES:
      raise ValueError(
        f"SGRAFSimilarity: module must be one of {SIMILARITY_MODULES}, got {self.module!r}"
      )
    chex.assert_rank([regions, words], 3)
    chex.assert_shape(region_mask, regions.shape[:2])
    chex.assert_shape(word_mask, words.shape[:2])
    img_glo = VisualSA(
      self.embed_dim, self.num_region, self.dropout, self.momentum, self.eps, name="v_global_w"
    )(regions, region_mask, train)
    txt_glo = TextSA(self.embed_dim, self.dropout, name="t_global_w")(words, word_mask, train)
    head, saf_bn = self._head()
    sims, moments = score_all_pairs(
      head,
      (regions, region_mask, img_glo),
      (words, word_mask, txt_glo),
      module=self.module,
      smooth=self.smooth,
      train=train,
      eps=self.eps,
      blocks=PairBlocks(self.block_size, self.remat, self.length_buckets),
    )
    if moments is not None and not self.is_initializing():
      if self.axis_name is not None:
        moments = jax.tree.map(lambda m: jax.lax.all_gather(m, self.axis_name, tiled=True), moments)
      mean_v, var_v = saf_bn
      mean_v.value = sequential_running_update(mean_v.value, moments.mean, momentum=self.momentum)
      var_v.value = sequential_running_update(
        var_v.value, unbiased(moments.var, moments.count), momentum=self.momentum
      )
    return sims


class SGRAF(nn.Module):
  """One SGR or SAF model: image encoder ``img_enc``, text encoder ``txt_enc`` and
  similarity head ``sim_enc`` (the official attribute names)."""

  vocab_size: int
  module: str = "SGR"
  img_dim: int = 2048
  word_dim: int = 300
  embed_dim: int = 1024
  sim_dim: int = 256
  sgr_step: int = 3
  num_region: int = 36
  smooth: float = 9.0
  text_dropout: float = 0.4
  sa_dropout: float = 0.4
  block_size: int = 8
  remat: str = "full"
  """``"dots"`` / ``"full"`` / ``"none"``: see :func:`!jitr.models.sgraf.head.score_all_pairs`."""
  length_buckets: int = 8
  """Caption blocks are cut to one of this many lengths (1: always the padded length)."""
  axis_name: str | None = None
  """The data-parallel axis the captions are split over (see :class:`SGRAFSimilarity`)."""

  def setup(self):
    self.img_enc = SGRAFImageEncoder(self.embed_dim)
    self.txt_enc = SGRAFTextEncoder(
      self.vocab_size, self.word_dim, self.embed_dim, self.text_dropout
    )
    self.sim_enc = SGRAFSimilarity(
      self.embed_dim,
      self.sim_dim,
      self.module,
      self.sgr_step,
      self.num_region,
      self.smooth,
      self.sa_dropout,
      self.block_size,
      self.remat,
      self.length_buckets,
      axis_name=self.axis_name,
    )

  def encode_image(self, images: jax.Array, image_mask: jax.Array | None = None):
    return self.img_enc(images, image_mask)

  def encode_text(self, tokens: jax.Array, lengths: jax.Array, train: bool = False):
    return self.txt_enc(tokens, lengths, train)

  def score(
    self,
    regions: jax.Array,
    region_mask: jax.Array,
    words: jax.Array,
    word_mask: jax.Array,
    train: bool = False,
  ) -> jax.Array:
    return self.sim_enc(regions, region_mask, words, word_mask, train)

  def __call__(
    self,
    images: jax.Array,
    image_mask: jax.Array | None,
    tokens: jax.Array,
    lengths: jax.Array,
    train: bool = False,
  ) -> jax.Array:
    """``sim [B_img, B_txt]`` from raw region features and token ids."""
    regions, region_mask = self.encode_image(images, image_mask)
    words, word_mask = self.encode_text(tokens, lengths, train)
    return self.score(regions, region_mask, words, word_mask, train)


def sgraf_similarity(sim_sgr: jax.Array, sim_saf: jax.Array) -> jax.Array:
  """SGRAF: ``(sim_SGR + sim_SAF) / 2`` of two separately trained models."""
  chex.assert_equal_shape([sim_sgr, sim_saf])
  return (sim_sgr + sim_saf) / 2
