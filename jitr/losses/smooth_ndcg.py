"""Smooth-NDCG, a differentiable NDCG over the batch: the listwise loss of Listwise ITR
(Li et al., "Integrating Listwise Ranking into Pairwise-based Image-Text Retrieval",
arXiv:2305.16566, eq. 9–21; code AAA-Zheng/Listwise_ITR)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jitr.losses import checks, dcg
from jitr.losses import query_rows as qr
from jitr.losses import ranks as ranks_lib
from jitr.losses import saturation_window as window_lib


def smooth_ndcg_query(
  query: qr.Query,
  *,
  temperature: float | jax.Array = 0.01,
  block_size: int = 16,
  top_m: int = 0,
  window: bool = False,
) -> tuple[jax.Array, jax.Array]:
  """One query's ``1 − NDCĜ`` and whether it counts (it has a relevant valid item).

  ``query.graded`` is the relevance ``r``, set to 1 on ``query.positives``;
  ``π̂_j = 1 + Σ_{k≠j} σ((s_k − s_j)/τ)`` (:func:`!jitr.losses.ranks.approx_ranks`, its
  custom VJP keeps the residuals at O(C)), ``DCĜ = Σ_j (2^{r_j} − 1) / log2(1 + π̂_j)``,
  IDCG from ``r`` sorted. Rows are mapped ``block_size`` at a time (``lax.map``), so
  neither pass holds more than ``block_size × C × C`` pairwise terms.

  ``top_m = M`` (``1 <= M < C``): Smooth-NDCG@M, the sums over the ``M`` valid candidates
  of the largest gains ``T`` (ties: the first), each one's ``π̂_j`` still over all ``C``
  scores (:func:`!jitr.losses.ranks.approx_ranks_of`): ``DCĜ_M = Σ_{j∈T} (2^{r_j} − 1) /
  log2(1 + π̂_j)`` over ``IDCG_M`` (the ``M`` largest gains at positions 1…M), ``M × C``
  pairs a query. It equals the full loss when no candidate outside ``T`` has a gain (top-K
  relevance, ``M >= K``). ``0`` (or ``M >= C``): every candidate.

  ``window``: the same ``π̂`` (within float32 rounding) by sorting the scores and summing
  each candidate's sigmoids only over its unsaturated neighbours
  (:func:`!jitr.losses.saturation_window.window_ranks`): ``O(C log C + C·W)`` a query, ``W``
  the widest run of candidates within ``ln(C·2²⁴)·τ`` of one another in the block.
  """
  del block_size  # how many rows are mapped at once (SMOOTH_NDCG.block)
  relevance = jnp.where(query.positives, 1.0, query.graded.astype(query.sim.dtype))
  ranks = None
  if window:
    ranks = window_lib.window_ranks(query.sim, temperature=temperature, where=query.where)
  if 0 < top_m < query.sim.shape[0]:
    value, has_relevant = _ndcg_at(query, relevance, temperature, top_m, ranks)
  else:
    if ranks is None:
      ranks = ranks_lib.approx_ranks(query.sim, temperature=temperature, where=query.where)
    value, has_relevant = dcg.ndcg_from_ranks(ranks, relevance, where=query.where)
  return 1.0 - value, has_relevant & jnp.any(query.where)


def _ndcg_at(
  query: qr.Query,
  relevance: jax.Array,
  temperature: float | jax.Array,
  top_m: int,
  every_rank: jax.Array | None,
) -> tuple[jax.Array, jax.Array]:
  """``(DCĜ_M / IDCG_M, IDCG_M > 0)`` of one query (:func:`smooth_ndcg_query`'s ``top_m``),
  the chosen candidates' ranks gathered from ``every_rank`` when given."""
  gains = jnp.where(query.where, dcg.gain(relevance), 0.0)
  top, index = jax.lax.top_k(gains, top_m)
  chosen_where = query.where[index]
  if every_rank is not None:
    ranks = every_rank[index]
  else:
    ranks = ranks_lib.approx_ranks_of(
      query.sim[index],
      query.sim,
      temperature=temperature,
      where=query.where,
      chosen_where=chosen_where,
    )
  value = jnp.sum(jnp.where(chosen_where, top * dcg.discount(ranks), 0.0))
  idcg = dcg.ideal_dcg(relevance, where=query.where, top_k=top_m)
  valid = ~(idcg <= 0)  # a NaN relevance keeps the query (its NDCG is NaN)
  return jnp.where(valid, value / jnp.where(valid, idcg, 1.0), 0.0), valid


#: Smooth-NDCG, written once as :func:`smooth_ndcg_query`.
SMOOTH_NDCG = qr.QueryLoss(
  smooth_ndcg_query,
  ranges={
    "temperature": checks.POSITIVE,
    "block_size": checks.BLOCK_SIZE,
    "top_m": checks.COUNT,
    "window": checks.SWITCH,
  },
  graded="relevance",
  block="block_size",
  identity_positives=False,
)

#: The core of :func:`smooth_ndcg` on a block of query rows: ``(rows, *, key=None,
#: temperature=0.01, block_size=16, top_m=0, window=False) -> (1 − NDCĜ [Q], weight
#: [Q])``; ``rows.graded`` is the relevance (``key`` unused).
smooth_ndcg_queries = SMOOTH_NDCG.per_query

smooth_ndcg = SMOOTH_NDCG.function(
  """Smooth-NDCG loss ``1 − NDCĜ`` in both directions.

  For a query row with scores ``s`` and relevance ``r`` (positives set to 1):

  * approximate rank ``π̂_j = 1 + Σ_{k≠j} σ((s_k − s_j)/τ)``,
  * ``DCĜ = Σ_j (2^{r_j} − 1) / log2(1 + π̂_j)``,
  * IDCG from the relevance sorted in descending order (ties at distinct
    positions, so a perfect ranking scores 1),
  * loss ``1 − DCĜ/IDCG``; rows with no relevant item do not count;
  * ``top_m = M``: ``DCĜ_M/IDCG_M``, the sums over the ``M`` candidates of the largest
    gains (NDCG@M with soft ranks over all candidates).

  Image->text uses the rows of ``sim`` and ``relevance``; text->image their
  transposes. Memory is O(N²) per direction in forward and backward.

  Args:
    sim: ``[N_img, N_txt]`` similarities.
    relevance: ``[N_img, N_txt]`` graded relevance in [0, 1] (pass it as an
      argument of the jitted function, not as a closed-over constant); a negative
      value counts as 0 (:func:`!jitr.losses.dcg.gain`), so the loss stays <= 1.
    positives: optional bool mask of annotated pairs, whose relevance is set to 1.
    where: bool mask of valid pairs, broadcastable to ``sim`` (padding).
    temperature: τ > 0 of the rank sigmoid (0.01 in the paper); not differentiated.
    block_size: query rows processed at once (memory ``block_size·N²`` at most).
    top_m: ``M >= 1``: Smooth-NDCG@M, each query's DCG and IDCG over its ``M`` candidates
      of the largest gains, their soft ranks still over every candidate (cost and memory
      ``N·M`` a query instead of ``N²``; the full loss when every other gain is 0, as with
      top-K relevance and ``M >= K``); ``0``: every candidate.
    window: the same soft ranks (within float32 rounding) from each query's scores sorted,
      summing each candidate's sigmoids only over its neighbours within ``ln(N·2²⁴)·τ``
      (farther pairs add exactly 0 or 1): ``O(N log N + N·W)`` a query for runs of ``W``
      such neighbours, instead of ``N²``; it pays when ``W`` is well below ``N``.
    reduction: ``"mean"`` over queries, ``"sum"``, or ``"none"``.

  >>> import jax.numpy as jnp
  >>> sim = jnp.array([[0.9, 0.1], [0.2, 0.8]])
  >>> rel = jnp.array([[1.0, 0.0], [0.0, 1.0]])
  >>> round(float(smooth_ndcg(sim, rel, temperature=1e-3)), 6)  # perfectly ranked
  0.0
  """
)
