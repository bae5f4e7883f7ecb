"""The SGR / SAF similarity head on one block of (image, caption) pairs, as pure math.

For image ``i`` (regions ``v``, global ``g_i``) and caption ``c`` (words ``q``,
global ``h_c``), with ``a_t`` from :func:`jitr.models.masked_ops.scan_attention`::

    n_t = l2norm(W_loc (a_t − q_t)² + b_loc)      (local nodes, t = 1..L_c)
    n_0 = l2norm(W_glo (g_i − h_c)² + b_glo)      (global node, node 0)
    SGR: K steps (separate weights, no residual):
         E = softmax_k((W_q n + b_q)(W_k n + b_k)ᵀ),  n ← ReLU(W_g (E n) + b_g);  u = n_0
    SAF: w_k = l1norm_k(σ(BN(W_a n_k + b_a))),  u = l2norm(Σ_k w_k n_k)
    sim = σ(W_e u + b_e)

SAF's ``BatchNorm1d(1)`` sees the ``[n_image, 1, L_c + 1]`` logits of one caption
at a time (the official forward loops over captions), so in training it
normalises with that caption's mean / variance over all images and its valid
nodes; the moments are returned so the caller can update the running statistics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jitr.models.branch_remat import switch_rematerialised
from jitr.models.masked_ops import l1norm, l2norm, masked_moments, masked_softmax, scan_attention

Linear = tuple[jax.Array, jax.Array]  # (kernel [in, out], bias [out])
Params = dict[str, Any]


class BatchNormState(NamedTuple):
  """A 1-channel BatchNorm: affine ``scale``, ``bias``; running ``mean``, ``var``."""

  scale: jax.Array
  bias: jax.Array
  mean: jax.Array
  var: jax.Array


class CaptionMoments(NamedTuple):
  """Per-caption SAF batch-norm moments ``[C]``: mean, biased variance, count."""

  mean: jax.Array
  var: jax.Array
  count: jax.Array


def linear(x: jax.Array, layer: Linear) -> jax.Array:
  """``x W + b`` (PyTorch ``Linear`` with ``W = weightᵀ``)."""
  kernel, bias = layer
  return x @ kernel + bias


def similarity_nodes(
  head: Params,
  regions: jax.Array,
  region_mask: jax.Array,
  img_glo: jax.Array,
  words: jax.Array,
  word_mask: jax.Array,
  txt_glo: jax.Array,
  *,
  smooth: float,
) -> tuple[jax.Array, jax.Array]:
  """The similarity graph ``[I, C, 1 + L, S]`` (node 0 global) and its node mask ``[C, 1 + L]``."""
  a = scan_attention(words, word_mask, regions, region_mask, smooth=smooth)
  local = l2norm(linear((a - words[None]) ** 2, head["sim_tranloc_w"]))
  glob = l2norm(linear((img_glo[:, None, :] - txt_glo[None, :, :]) ** 2, head["sim_tranglo_w"]))
  nodes = jnp.concatenate([glob[:, :, None, :], local], axis=2)
  node_mask = jnp.concatenate([jnp.ones_like(word_mask[:, :1]), word_mask], axis=1)
  return nodes, node_mask


def sgr_vector(
  head: Params, nodes: jax.Array, node_mask: jax.Array, *, train: bool, eps: float
) -> tuple[jax.Array, CaptionMoments | None]:
  """Similarity graph reasoning: ``len(head['SGR_module'])`` steps, then node 0.

  Two exact savings over the official computation (the same numbers, fewer products):

  * the edge logits ``(W_q n_k + b_q)·(W_k n_l + b_k)`` are computed as
    ``(n_k M + c)·n_l`` with ``M = W_q W_kᵀ``, ``c = b_q W_kᵀ``: the dropped terms
    ``n_k W_q b_k`` and ``b_q·b_k`` do not depend on ``l``, so the softmax over ``l`` is
    the official one, with one ``[K, S] x [S, S]`` product per node instead of two;
  * only node 0 leaves the last step, so that step computes node 0's query, edges and
    update alone.
  """
  del train, eps
  key_mask = node_mask[None, :, None, :]
  steps = head["SGR_module"]
  for k, step in enumerate(steps):
    (w_q, b_q), (w_k, _) = step["graph_query_w"], step["graph_key_w"]
    queries = nodes if k < len(steps) - 1 else nodes[:, :, :1]
    query = linear(queries, (w_q @ w_k.T, b_q @ w_k.T))
    edge = masked_softmax(jnp.einsum("icks,icls->ickl", query, nodes), key_mask, axis=-1)
    nodes = jax.nn.relu(linear(jnp.einsum("ickl,icls->icks", edge, nodes), step["sim_graph_w"]))
  return nodes[:, :, 0, :], None


def saf_vector(
  head: Params, nodes: jax.Array, node_mask: jax.Array, *, train: bool, eps: float
) -> tuple[jax.Array, CaptionMoments | None]:
  """Similarity attention filtration; in training also the per-caption BN moments."""
  saf = head["SAF_module"]
  bn: BatchNormState = saf["bn"]
  logits = linear(nodes, saf["attn_sim_w"])[..., 0]  # [I, C, K]
  mask = jnp.broadcast_to(node_mask[None], logits.shape)
  moments = None
  if train:
    mean, var, count = masked_moments(logits, mask, axes=(0, 2))
    moments = CaptionMoments(mean, var, count)
    mean, var = mean[None, :, None], var[None, :, None]
  else:
    mean, var = bn.mean, bn.var
  normed = (logits - mean) * jax.lax.rsqrt(var + eps) * bn.scale + bn.bias
  weights = l1norm(jax.nn.sigmoid(normed), axis=-1, mask=mask)
  return l2norm(jnp.einsum("ick,icks->ics", weights, nodes)), moments


AGGREGATORS: dict[str, Callable[..., tuple[jax.Array, CaptionMoments | None]]] = {
  "SGR": sgr_vector,
  "SAF": saf_vector,
}


def score_block(
  head: Params,
  images: tuple[jax.Array, jax.Array, jax.Array],
  captions: tuple[jax.Array, jax.Array, jax.Array],
  *,
  module: str,
  smooth: float,
  train: bool,
  eps: float,
) -> tuple[jax.Array, CaptionMoments | None]:
  """``sim [I, C]`` of all images against one caption block (and SAF's moments).

  ``images = (regions [I, R, D], region_mask [I, R], img_glo [I, D])``;
  ``captions = (words [C, L, D], word_mask [C, L], txt_glo [C, D])``.
  """
  nodes, node_mask = similarity_nodes(head, *images, *captions, smooth=smooth)
  vec, moments = AGGREGATORS[module](head, nodes, node_mask, train=train, eps=eps)
  return jax.nn.sigmoid(linear(vec, head["sim_eval_w"])[..., 0]), moments


REMAT_MODES = ("full", "dots", "none")
"""How a caption block's activations reach the backward pass (``score_all_pairs``'s ``remat``):

* ``"full"``: only the block's inputs are kept; the backward pass runs the chosen
  length branch's forward again and then its backward
  (:func:`jitr.models.branch_remat.switch_rematerialised`): least memory, one extra
  forward;
* ``"dots"``: ``jax.checkpoint`` with ``dots_with_no_batch_dims_saveable`` (keeps the
  matrix products' outputs, recomputes the elementwise work): a little faster, but
  differentiating the length switch keeps every branch's saved products, so its
  memory grows with ``length_buckets``;
* ``"none"``: every block's activations are stored (most memory).
"""


def length_buckets(max_length: int, n_buckets: int) -> tuple[int, ...]:
  """The static word counts a caption block is cut to: ``ceil(j·L / n)`` for ``j = 1..n``
  (duplicates dropped), ascending, the last ``L``.

  >>> length_buckets(32, 4), length_buckets(12, 4), length_buckets(3, 4), length_buckets(9, 1)
  ((8, 16, 24, 32), (3, 6, 9, 12), (1, 2, 3), (9,))
  """
  if n_buckets < 1:
    raise ValueError(f"length_buckets must be >= 1, got {n_buckets}")
  return tuple(sorted({-(-j * max_length // n_buckets) for j in range(1, n_buckets + 1)}))


def _by_length(word_mask: jax.Array) -> tuple[jax.Array, jax.Array]:
  """``(order, inverse)``: captions sorted by their word count (stable), and back."""
  order = jnp.argsort(jnp.sum(word_mask, axis=1), stable=True)
  return order, jnp.argsort(order)


@dataclasses.dataclass(frozen=True)
class PairBlocks:
  """How :func:`score_all_pairs` walks the captions: ``size`` captions a block, each block
  cut to one of ``length_buckets`` widths, ``remat`` (:data:`REMAT_MODES`) in the backward
  pass."""

  size: int
  remat: str = "full"
  length_buckets: int = 8

  def __post_init__(self):
    if self.remat not in REMAT_MODES:
      raise ValueError(f"remat must be one of {REMAT_MODES}, got {self.remat!r}")


def score_all_pairs(
  head: Params,
  images: tuple[jax.Array, jax.Array, jax.Array],
  captions: tuple[jax.Array, jax.Array, jax.Array],
  *,
  module: str,
  smooth: float,
  train: bool,
  eps: float,
  blocks: PairBlocks,
) -> tuple[jax.Array, CaptionMoments | None]:
  """``sim [I, N]`` for all images against all ``N`` captions, ``blocks.size`` captions at
  a time (``lax.map`` over blocks).

  * **Length buckets.** The captions are scored in order of their word count, and each
    block is cut to the smallest of :func:`length_buckets` ``(L, blocks.length_buckets)``
    that holds its longest caption (``lax.switch`` picks the branch, so only that
    one runs): a block of short captions costs what its words cost, not ``L``.
    Padding never changes a score, so the cut is exact; ``sim`` and SAF's moments
    come back in the captions' order.
  * **Rematerialisation** (``blocks.remat``, :data:`REMAT_MODES`): by default (``"full"``)
    the backward pass recomputes each block's ``[I, block, L, D]`` activations from
    its inputs instead of storing them.
  """
  block_size, remat, n_length_buckets = blocks.size, blocks.remat, blocks.length_buckets
  n, max_length = captions[1].shape
  order, inverse = _by_length(captions[1])
  captions = tuple(jnp.take(jnp.asarray(x), order, axis=0) for x in captions)
  n_blocks = -(-n // block_size)
  pad = n_blocks * block_size - n

  def in_blocks(x):
    x = jnp.pad(x, [(0, pad)] + [(0, 0)] * (x.ndim - 1))
    return x.reshape((n_blocks, block_size) + x.shape[1:])

  cuts = length_buckets(max_length, n_length_buckets)

  def cut_to(length):
    def score(head, images, caps):
      words, word_mask, txt_glo = caps
      caps = (words[:, :length], word_mask[:, :length], txt_glo)
      return score_block(head, images, caps, module=module, smooth=smooth, train=train, eps=eps)

    return score

  branches = [cut_to(length) for length in cuts]
  switch = switch_rematerialised if remat == "full" else jax.lax.switch

  def one_block(head, images, caps):
    longest = jnp.max(jnp.sum(caps[1], axis=1))
    branch = jnp.searchsorted(jnp.asarray(cuts), longest, side="left")
    return switch(jnp.minimum(branch, len(cuts) - 1), branches, head, images, caps)

  if remat == "dots":
    one_block = jax.checkpoint(
      one_block, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable
    )
  sims, moments = jax.lax.map(
    lambda caps: one_block(head, images, caps), tuple(in_blocks(x) for x in captions)
  )
  sims = jnp.moveaxis(sims, 0, 1).reshape(sims.shape[1], -1)[:, :n][:, inverse]
  if moments is not None:
    moments = CaptionMoments(*(m.reshape(-1)[:n][inverse] for m in moments))
  return sims, moments


def sequential_running_update(
  running: jax.Array, batch: jax.Array, *, momentum: float
) -> jax.Array:
  """The running statistic after ``len(batch)`` PyTorch updates ``r ← (1 − m) r + m b_j`` in
  order: ``(1 − m)^N r + Σ_j m (1 − m)^(N − 1 − j) b_j`` (SAF updates once per caption)."""
  n = batch.shape[0]
  decay = (1.0 - momentum) ** jnp.arange(n - 1, -1, -1, dtype=batch.dtype)
  return (1.0 - momentum) ** n * running + momentum * jnp.sum(decay * batch)
