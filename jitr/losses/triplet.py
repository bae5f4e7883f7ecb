"""The triplet loss of VSE++ (Faghri et al., "VSE++: Improving Visual-Semantic Embeddings with
Hard Negatives", BMVC 2018): max of hinges (LMH) and sum of hinges (LSH)."""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

from jitr.losses import checks
from jitr.losses import query_rows as qr

Mining = Literal["max", "sum"]


def _sum_of_hinges(scores: jax.Array, negatives: jax.Array, margin: float) -> jax.Array:
  """``h_p = Σ_{n ∈ negatives} [margin + s_n − s_p]_+`` for every item p of one row.

  O(M log M) instead of O(M²): with the negative scores sorted in descending
  order ``v_1 ≥ v_2 ≥ …`` and prefix sums ``S_k``, the ``k_p = #{n: s_n > s_p −
  margin}`` violating negatives give ``h_p = S_{k_p} + k_p·(margin − s_p)``.
  """
  keys = jnp.where(negatives, -scores, jnp.inf)  # ascending = scores descending
  order = jnp.argsort(keys)
  sorted_keys = keys[order]
  values = jnp.where(negatives, scores, 0.0)[order]
  prefix = jnp.concatenate([jnp.zeros((1,), scores.dtype), jnp.cumsum(values)])
  threshold = jax.lax.stop_gradient(margin - scores)  # s_n > s_p − m  <=>  −s_n < m − s_p
  count = jnp.searchsorted(sorted_keys, threshold, side="left")
  return prefix[count] + count.astype(scores.dtype) * (margin - scores)


def triplet_per_query(
  sim: jax.Array,
  positives: jax.Array,
  where: jax.Array,
  *,
  margin: float,
  mining: Mining,
) -> tuple[jax.Array, jax.Array]:
  """Per-row triplet loss of ``[Q, C]`` arrays: ``(loss [Q], weight [Q])``.

  For query i with valid positives P_i and valid negatives N_i:
  LMH: ``mean_{p∈P_i} [margin + max_{n∈N_i} s_in − s_ip]_+``;
  LSH: ``mean_{p∈P_i} Σ_{n∈N_i} [margin + s_in − s_ip]_+``.
  With one positive per query these are exactly VSE++'s two losses. A query
  with no valid positive has weight 0; with no negative its loss is 0.
  """
  pos = positives & where
  neg = where & ~positives
  if mining == "max":
    hardest = jnp.max(jnp.where(neg, sim, -jnp.inf), axis=-1, keepdims=True, initial=-jnp.inf)
    has_neg = jnp.any(neg, axis=-1, keepdims=True)
    hinge = jnp.where(has_neg, jax.nn.relu(margin + jnp.where(has_neg, hardest, 0.0) - sim), 0.0)
  elif mining == "sum":
    hinge = jax.vmap(_sum_of_hinges, in_axes=(0, 0, None))(sim, neg, margin)
  else:
    raise ValueError(f"mining: expected 'max' (LMH) or 'sum' (LSH), got {mining!r}")
  n_pos = jnp.sum(pos, axis=-1)
  loss = jnp.sum(jnp.where(pos, hinge, 0.0), axis=-1) / jnp.maximum(n_pos, 1)
  return loss, n_pos > 0


def triplet_queries(
  rows: qr.QueryRows,
  *,
  key: jax.Array | None = None,
  margin: float = 0.2,
  mining: Mining = "max",
) -> tuple[jax.Array, jax.Array]:
  """The per-query core of :func:`triplet` on a block of query rows (``key`` unused)."""
  del key
  rows = qr.without_padding(rows)
  checks.check_nonnegative("margin", margin)
  checks.check_choice("mining", mining, ("max", "sum"))
  loss, weight = triplet_per_query(
    rows.sim, rows.positives, rows.where, margin=margin, mining=mining
  )
  return checks.propagate_nonfinite(loss, rows.where, rows.sim), weight


def triplet(
  sim: jax.Array,
  *,
  positives: jax.Array | None = None,
  where: jax.Array | None = None,
  margin: float = 0.2,
  mining: Mining = "max",
  reduction: qr.Reduction = "mean",
) -> jax.Array | qr.DirectionalLoss:
  """VSE++ triplet loss in both directions.

  ``L = Σ_dir reduce_q mean_{p∈P_q} [margin + s_qn − s_qp]_+`` with the hardest
  valid negative n (``mining="max"``, LMH) or summed over all valid negatives
  (``mining="sum"``, LSH); image->text on rows, text->image on columns.

  Args:
    sim: ``[N_img, N_txt]`` similarities.
    positives: bool ``[N_img, N_txt]`` annotated pairs (default: identity).
      Several captions of one image are all positives, never negatives.
    where: bool mask of valid pairs, broadcastable to ``sim`` (padding).
    margin: the hinge margin λ (0.2 in VSE++).
    mining: ``"max"`` (LMH, hardest negative) or ``"sum"`` (LSH).
    reduction: ``"mean"`` over queries (default), ``"sum"`` (VSE++'s code) or
      ``"none"`` for per-query values (a :class:`DirectionalLoss`).

  Returns:
    The scalar loss, or per-query losses for ``reduction="none"``.

  >>> import jax.numpy as jnp
  >>> sim = jnp.array([[0.9, 0.8], [0.1, 0.5]])
  >>> float(triplet(sim, reduction="sum"))  # [.2+.8-.9]+[.2+.1-.5] + [.2+.1-.9]+[.2+.8-.5]
  0.6...
  """
  return qr.both_ways(
    triplet_queries,
    sim,
    positives=positives,
    where=where,
    reduction=reduction,
    margin=margin,
    mining=mining,
  )
