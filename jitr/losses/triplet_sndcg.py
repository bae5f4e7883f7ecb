"""Listwise ITR's training objective (triplet + Smooth-NDCG) as one JAX function (Li et al.,
"Integrating Listwise Ranking into Pairwise-based Image-Text Retrieval", arXiv:2305.16566).

The terms, logged values and relevance follow the official ``TripletSNDCGLoss``
(AAA-Zheng/Listwise_ITR ``model.py``) for one caption per image (positives on
the diagonal), built from jitr's losses:

* relevance ``r_ij = (1 + max_k cos(g(T_i^k), g(T_j)))/2``, ``r_ii = 1``;
* pairwise ``(L_i2t + L_t2i)/2``, VSE++ hardest-negative triplet, mean over queries;
* listwise ``(mean_i (1 − NDCĜ_i) + mean_j (1 − NDCĜ_j))/2``;
* loss ``(1 − w)·pairwise + w·listwise``.

Text->image relevance orientation: a caption query j ranks the images i by
``r_ij`` (``"corrected"``, the transposed matrix, as :func:`jitr.losses.smooth_ndcg`
does). The official code ranks them by ``r_ji`` (``"official"``: the row of
the *image* j against caption i), i.e. it reuses the image->text matrix untransposed.
"""

from __future__ import annotations

from typing import Any, Literal

import jax
import jax.numpy as jnp

from jitr.losses import checks
from jitr.losses import query_rows as qr
from jitr.losses.dcg import ndcg
from jitr.losses.relevance import relevance_from_embeddings
from jitr.losses.smooth_ndcg import smooth_ndcg_queries
from jitr.losses.triplet import triplet, triplet_queries

Orientation = Literal["corrected", "official"]
ORIENTATIONS = ("corrected", "official")

__all__ = ["ORIENTATIONS", "Orientation", "triplet_sndcg", "triplet_sndcg_rows"]


def _real_ndcg(sim: jax.Array, relevance: jax.Array, where: jax.Array) -> jax.Array:
  """``mean_q NDCG_q`` with exact ranks, over the queries with a valid entry."""
  values = jax.vmap(lambda s, r, w: ndcg(s, r, where=w))(sim, relevance, where)
  return qr.masked_mean(values, jnp.any(where, axis=-1).astype(sim.dtype))


def triplet_sndcg(
  sim: jax.Array,
  reference_embeddings: jax.Array,
  caption_embeddings: jax.Array,
  *,
  where: jax.Array | None = None,
  margin: float = 0.2,
  temperature: float = 0.01,
  sndcg_weight: float = 0.5,
  orientation: Orientation = "corrected",
) -> tuple[jax.Array, dict[str, jax.Array]]:
  """``(1 − w)·pairwise + w·listwise`` and the values Listwise ITR logs.

  Args:
    sim: ``[N, N]`` similarities of image i and caption j (caption i describes image i).
    reference_embeddings: ``[N, K, E]`` sentence embeddings of each image's K
      reference captions (K = 5 on COCO and Flickr30K).
    caption_embeddings: ``[N, E]`` sentence embeddings of the batch's captions.
    where: bool mask of valid pairs broadcastable to ``[N, N]`` (padding).
    margin: triplet margin λ.
    temperature: τ of the rank sigmoid.
    sndcg_weight: w in [0, 1].
    orientation: ``"corrected"`` or ``"official"`` text->image relevance (module doc).

  Returns:
    ``(loss, {"pairwise", "listwise", "ndcg_t", "real_ndcg_t", "ndcg_v",
    "real_ndcg_v"})``: ``ndcg_t`` / ``ndcg_v`` are the mean smooth NDCĜ of the
    image->text / text->image queries, ``real_*`` the exact NDCG.
  """
  checks.check_choice("orientation", orientation, ORIENTATIONS)
  checks.check_unit_interval("sndcg_weight", sndcg_weight)
  n = sim.shape[0]
  positives = jnp.eye(n, dtype=bool)
  _, where = qr.resolve_masks(sim, positives, where)
  relevance = relevance_from_embeddings(
    reference_embeddings, caption_embeddings, positives=positives
  ).astype(sim.dtype)
  pairwise = triplet(sim, positives=positives, where=where, margin=margin) / 2
  t2i_relevance = relevance.T if orientation == "corrected" else relevance
  i2t, t2i = qr.directions(sim, positives, where, relevance)
  t2i = t2i._replace(graded=t2i_relevance)
  (l_t, w_t), (l_v, w_v) = (smooth_ndcg_queries(r, temperature=temperature) for r in (i2t, t2i))
  w_t, w_v = w_t.astype(sim.dtype), w_v.astype(sim.dtype)
  listwise = (qr.masked_mean(l_t, w_t) + qr.masked_mean(l_v, w_v)) / 2
  metrics = {
    "pairwise": pairwise,
    "listwise": listwise,
    "ndcg_t": qr.masked_mean(1.0 - l_t, w_t),
    "real_ndcg_t": _real_ndcg(sim, relevance, where),
    "ndcg_v": qr.masked_mean(1.0 - l_v, w_v),
    "real_ndcg_v": _real_ndcg(sim.T, t2i_relevance, where.T),
  }
  return (1.0 - sndcg_weight) * pairwise + sndcg_weight * listwise, metrics


def _hyper(given: dict[str, Any]) -> dict[str, Any]:
  """:func:`triplet_sndcg`'s hyper-parameters: its defaults updated by ``given``, checked."""
  hyper = qr.keyword_defaults(triplet_sndcg)
  del hyper["where"]
  unknown = sorted(set(given) - set(hyper))
  if unknown:
    raise TypeError(f"triplet_sndcg_rows() got an unexpected keyword argument {unknown[0]!r}")
  hyper.update(given)
  checks.check_choice("orientation", hyper["orientation"], ORIENTATIONS)
  checks.check_unit_interval("sndcg_weight", hyper["sndcg_weight"])
  return hyper


def _real_ndcg_sum(sim: jax.Array, relevance: jax.Array, where: jax.Array):
  """``(Σ_q NDCG_q, #queries)`` with exact ranks, over the queries with a valid entry."""
  values = jax.vmap(lambda s, r, w: ndcg(s, r, where=w))(sim, relevance, where)
  weight = jnp.any(where, axis=-1).astype(sim.dtype)
  return qr.masked_sum(values, weight), jnp.sum(weight)


def triplet_sndcg_rows(
  i2t_sim: jax.Array,
  t2i_sim: jax.Array,
  reference_embeddings: jax.Array,
  caption_embeddings: jax.Array,
  index: jax.Array,
  valid: jax.Array,
  count: jax.Array,
  **hyper: Any,
) -> tuple[jax.Array, dict[str, jax.Array]]:
  """One process's share of :func:`triplet_sndcg`: the terms of its own queries only.

  The process owns the images and captions ``index`` of the global batch of ``M``
  pairs and ranks them against every candidate: O(b·M²) for Smooth-NDCG instead of
  O(M³). Every valid query counts in every term (its positive is its own pair), so
  each term is a sum over queries divided by ``count``, the global number of valid
  pairs: the shares of all processes add up to :func:`triplet_sndcg`'s loss.

  Args:
    i2t_sim: ``[b, M]`` similarities of the own images to every caption.
    t2i_sim: ``[b, M]`` similarities of the own captions to every image.
    reference_embeddings: ``[M, K, E]`` of every image of the global batch.
    caption_embeddings: ``[M, E]`` of every caption of the global batch.
    index: int ``[b]`` global index of each own pair (−1: a padding row).
    valid: bool ``[M]`` the valid pairs of the global batch (False: padding).
    count: the number of valid pairs of the global batch (a 0-d array).
    **hyper: ``margin``, ``temperature``, ``sndcg_weight``, ``orientation``, with
      :func:`triplet_sndcg`'s defaults (read from its signature).

  Returns:
    ``(share, sums)``: ``share`` of the loss; ``sums`` has ``pairwise`` and
    ``listwise`` (shares, as the loss) and, summed over the own queries,
    ``ndcg_t`` / ``ndcg_v`` (smooth NDCĜ), ``real_ndcg_t`` / ``real_ndcg_v``
    (exact NDCG) with their query counts ``count_t`` / ``count_v`` /
    ``real_count_t`` / ``real_count_v``.
  """
  hyper = _hyper(hyper)
  m = i2t_sim.shape[1]
  own = index >= 0
  safe = jnp.where(own, index, 0)
  positives = (index[:, None] == jnp.arange(m)[None, :]) & own[:, None]
  where = own[:, None] & valid[safe][:, None] & valid[None, :]
  # Own rows of r [M, M]: the own images' rows; the own captions' columns.
  rows_r = relevance_from_embeddings(
    reference_embeddings[safe], caption_embeddings, positives=positives
  ).astype(i2t_sim.dtype)
  cols_r = relevance_from_embeddings(
    reference_embeddings, caption_embeddings[safe], positives=positives.T
  ).T.astype(i2t_sim.dtype)
  t2i_relevance = cols_r if hyper["orientation"] == "corrected" else rows_r
  i2t = qr.QueryRows(i2t_sim, positives, where, rows_r, safe, qr.IMAGE_TO_TEXT)
  t2i = qr.QueryRows(t2i_sim, positives, where, t2i_relevance, safe, qr.TEXT_TO_IMAGE)
  count = jnp.maximum(jnp.asarray(count, i2t_sim.dtype), 1.0)

  def per_query(core, **hyper):
    """``((l_t, w_t), (l_v, w_v))``: the own image and caption queries' terms."""
    return tuple(
      (loss, weight.astype(i2t_sim.dtype))
      for loss, weight in (core(i2t, **hyper), core(t2i, **hyper))
    )

  def share(terms):
    (l_t, w_t), (l_v, w_v) = terms
    return (qr.masked_sum(l_t, w_t) + qr.masked_sum(l_v, w_v)) / (2 * count)

  pairwise = share(per_query(triplet_queries, margin=hyper["margin"]))
  (l_t, w_t), (l_v, w_v) = ndcg_terms = per_query(
    smooth_ndcg_queries, temperature=hyper["temperature"]
  )
  listwise = share(ndcg_terms)
  real_t, real_count_t = _real_ndcg_sum(i2t_sim, rows_r, where)
  real_v, real_count_v = _real_ndcg_sum(t2i_sim, t2i_relevance, where)
  sums = {
    "pairwise": pairwise,
    "listwise": listwise,
    "ndcg_t": qr.masked_sum(1.0 - l_t, w_t),
    "count_t": jnp.sum(w_t),
    "ndcg_v": qr.masked_sum(1.0 - l_v, w_v),
    "count_v": jnp.sum(w_v),
    "real_ndcg_t": real_t,
    "real_count_t": real_count_t,
    "real_ndcg_v": real_v,
    "real_count_v": real_count_v,
  }
  weight = hyper["sndcg_weight"]
  return (1.0 - weight) * pairwise + weight * listwise, sums
