"""Listwise ITR's training objective (triplet + Smooth-NDCG) as one JAX function.

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

from typing import Literal

import jax
import jax.numpy as jnp

from jitr import losses
from jitr.losses import _masks, checks
from jitr.losses.listwise_itr import smooth_ndcg_queries

Orientation = Literal["corrected", "official"]
ORIENTATIONS = ("corrected", "official")

__all__ = ["ORIENTATIONS", "Orientation", "triplet_sndcg"]


def _real_ndcg(sim: jax.Array, relevance: jax.Array, where: jax.Array) -> jax.Array:
  """``mean_q NDCG_q`` with exact ranks, over the queries with a valid entry."""
  values = jax.vmap(lambda s, r, w: losses.ndcg(s, r, where=w))(sim, relevance, where)
  return _masks.masked_mean(values, jnp.any(where, axis=-1).astype(sim.dtype))


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
  _, where = _masks.resolve_masks(sim, positives, where)
  relevance = losses.relevance_from_embeddings(
    reference_embeddings, caption_embeddings, positives=positives
  ).astype(sim.dtype)
  pairwise = losses.triplet(sim, positives=positives, where=where, margin=margin) / 2
  t2i_relevance = relevance.T if orientation == "corrected" else relevance
  i2t, t2i = _masks.query_rows(sim, positives, where, relevance)
  t2i = t2i._replace(graded=t2i_relevance)
  (l_t, w_t), (l_v, w_v) = (smooth_ndcg_queries(r, temperature=temperature) for r in (i2t, t2i))
  w_t, w_v = w_t.astype(sim.dtype), w_v.astype(sim.dtype)
  listwise = (_masks.masked_mean(l_t, w_t) + _masks.masked_mean(l_v, w_v)) / 2
  metrics = {
    "pairwise": pairwise,
    "listwise": listwise,
    "ndcg_t": _masks.masked_mean(1.0 - l_t, w_t),
    "real_ndcg_t": _real_ndcg(sim, relevance, where),
    "ndcg_v": _masks.masked_mean(1.0 - l_v, w_v),
    "real_ndcg_v": _real_ndcg(sim.T, t2i_relevance, where.T),
  }
  return (1.0 - sndcg_weight) * pairwise + sndcg_weight * listwise, metrics
