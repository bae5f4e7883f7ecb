"""Smooth-NDCG, a differentiable NDCG over the batch: the listwise loss of Listwise ITR
(Li et al., "Integrating Listwise Ranking into Pairwise-based Image-Text Retrieval",
arXiv:2305.16566, eq. 9–21; code AAA-Zheng/Listwise_ITR)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jitr.losses import checks, dcg
from jitr.losses import query_rows as qr
from jitr.losses import ranks as ranks_lib


def smooth_ndcg_queries(
  rows: qr.QueryRows,
  *,
  key: jax.Array | None = None,
  temperature: float | jax.Array = 0.01,
  block_size: int = 16,
) -> tuple[jax.Array, jax.Array]:
  """The per-query core of :func:`smooth_ndcg`: ``(1 − NDCĜ_q [Q], weight [Q])``.

  ``rows.graded`` is the relevance, set to 1 on ``rows.positives`` (``key`` unused).
  Rows are processed ``block_size`` at a time with ``lax.map`` so neither the
  forward nor the backward pass holds more than ``block_size × C × C`` pairwise
  terms (and XLA fuses those into the reductions); the ranks' custom VJP keeps
  the residuals at O(Q·C).
  """
  del key
  if rows.graded is None:
    raise ValueError("smooth_ndcg: needs a relevance matrix (rows.graded is None)")
  checks.check_positive("temperature", temperature)
  checks.check_block_size("block_size", block_size)
  rows = qr.without_padding(rows)
  relevance = jnp.where(rows.positives, 1.0, rows.graded.astype(rows.sim.dtype))

  def one_row(row):
    scores, rel, valid = row
    ranks = ranks_lib.approx_ranks(scores, temperature=temperature, where=valid)
    value, has_relevant = dcg.ndcg_from_ranks(ranks, rel, where=valid)
    return 1.0 - value, has_relevant & jnp.any(valid)

  loss, weight = jax.lax.map(
    one_row, (rows.sim, relevance, rows.where), batch_size=min(block_size, rows.sim.shape[0])
  )
  return checks.propagate_nonfinite(loss, rows.where, rows.sim, rows.graded), weight


def smooth_ndcg(
  sim: jax.Array,
  relevance: jax.Array,
  *,
  positives: jax.Array | None = None,
  where: jax.Array | None = None,
  temperature: float | jax.Array = 0.01,
  block_size: int = 16,
  reduction: qr.Reduction = "mean",
) -> jax.Array | qr.DirectionalLoss:
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
  chex.assert_rank(sim, 2)
  chex.assert_equal_shape([sim, relevance])
  if positives is None:  # no annotated pairs: the relevance is used as given
    positives = jnp.zeros(sim.shape, bool)
  return qr.both_ways(
    smooth_ndcg_queries,
    sim,
    positives=positives,
    where=where,
    graded=relevance,
    graded_name="relevance",
    reduction=reduction,
    temperature=temperature,
    block_size=block_size,
  )
