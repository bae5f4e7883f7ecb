"""Smooth-NDCG, a differentiable NDCG over the batch: the listwise loss of Listwise ITR
(Li et al., "Integrating Listwise Ranking into Pairwise-based Image-Text Retrieval",
arXiv:2305.16566, eq. 9–21; code AAA-Zheng/Listwise_ITR)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jitr.losses import checks, dcg
from jitr.losses import query_rows as qr
from jitr.losses import ranks as ranks_lib


def smooth_ndcg_query(
  query: qr.Query, *, temperature: float | jax.Array = 0.01, block_size: int = 16
) -> tuple[jax.Array, jax.Array]:
  """One query's ``1 − NDCĜ`` and whether it counts (it has a relevant valid item).

  ``query.graded`` is the relevance ``r``, set to 1 on ``query.positives``;
  ``π̂_j = 1 + Σ_{k≠j} σ((s_k − s_j)/τ)`` (:func:`!jitr.losses.ranks.approx_ranks`, its
  custom VJP keeps the residuals at O(C)), ``DCĜ = Σ_j (2^{r_j} − 1) / log2(1 + π̂_j)``,
  IDCG from ``r`` sorted. Rows are mapped ``block_size`` at a time (``lax.map``), so
  neither pass holds more than ``block_size × C × C`` pairwise terms.
  """
  del block_size  # how many rows are mapped at once (SMOOTH_NDCG.block)
  relevance = jnp.where(query.positives, 1.0, query.graded.astype(query.sim.dtype))
  ranks = ranks_lib.approx_ranks(query.sim, temperature=temperature, where=query.where)
  value, has_relevant = dcg.ndcg_from_ranks(ranks, relevance, where=query.where)
  return 1.0 - value, has_relevant & jnp.any(query.where)


#: Smooth-NDCG, written once as :func:`smooth_ndcg_query`.
SMOOTH_NDCG = qr.QueryLoss(
  smooth_ndcg_query,
  ranges={"temperature": checks.POSITIVE, "block_size": checks.BLOCK_SIZE},
  graded="relevance",
  block="block_size",
  identity_positives=False,
)

#: The core of :func:`smooth_ndcg` on a block of query rows: ``(rows, *, key=None,
#: temperature=0.01, block_size=16) -> (1 − NDCĜ [Q], weight [Q])``; ``rows.graded`` is
#: the relevance (``key`` unused).
smooth_ndcg_queries = SMOOTH_NDCG.per_query

smooth_ndcg = SMOOTH_NDCG.function(
  """Smooth-NDCG loss ``1 − NDCĜ`` in both directions.

  For a query row with scores ``s`` and relevance ``r`` (positives set to 1):

  * approximate rank ``π̂_j = 1 + Σ_{k≠j} σ((s_k − s_j)/τ)``,
  * ``DCĜ = Σ_j (2^{r_j} − 1) / log2(1 + π̂_j)``,
  * IDCG from the relevance sorted in descending order (ties at distinct
    positions, so a perfect ranking scores 1),
  * loss ``1 − DCĜ/IDCG``; rows with no relevant item do not count.

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
    reduction: ``"mean"`` over queries, ``"sum"``, or ``"none"``.

  >>> import jax.numpy as jnp
  >>> sim = jnp.array([[0.9, 0.1], [0.2, 0.8]])
  >>> rel = jnp.array([[1.0, 0.0], [0.0, 1.0]])
  >>> round(float(smooth_ndcg(sim, rel, temperature=1e-3)), 6)  # perfectly ranked
  0.0
  """
)
