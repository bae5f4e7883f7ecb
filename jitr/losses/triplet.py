"""The triplet loss of VSE++ (Faghri et al., "VSE++: Improving Visual-Semantic Embeddings with
Hard Negatives", BMVC 2018): max of hinges (LMH) and sum of hinges (LSH)."""

from __future__ import annotations

import functools
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


def triplet_query(
  query: qr.Query, *, margin: float = 0.2, mining: Mining = "max"
) -> tuple[jax.Array, jax.Array]:
  """One query's triplet loss and whether it counts (it has a valid positive).

  With valid positives P and valid negatives N of the query:
  LMH (``mining="max"``): ``mean_{p∈P} [margin + max_{n∈N} s_n − s_p]_+``;
  LSH (``mining="sum"``): ``mean_{p∈P} Σ_{n∈N} [margin + s_n − s_p]_+``.
  With one positive per query these are exactly VSE++'s two losses; with no negative the
  loss is 0.
  """
  sim, positives, where = query.sim, query.positives, query.where
  pos = positives & where
  neg = where & ~positives
  if mining == "max":
    hardest = jnp.max(jnp.where(neg, sim, -jnp.inf), initial=-jnp.inf)
    has_neg = jnp.any(neg)
    hinge = jnp.where(has_neg, jax.nn.relu(margin + jnp.where(has_neg, hardest, 0.0) - sim), 0.0)
  elif mining == "sum":
    hinge = _sum_of_hinges(sim, neg, margin)
  else:
    raise ValueError(f"mining: expected 'max' (LMH) or 'sum' (LSH), got {mining!r}")
  n_pos = jnp.sum(pos)
  return jnp.sum(jnp.where(pos, hinge, 0.0)) / jnp.maximum(n_pos, 1), n_pos > 0


#: The triplet loss, written once as :func:`triplet_query`.
TRIPLET = qr.QueryLoss(
  triplet_query, ranges={"margin": checks.NONNEGATIVE, "mining": checks.Choice(("max", "sum"))}
)

#: The core of :func:`triplet` on a block of query rows: ``(rows, *, key=None, margin=0.2,
#: mining="max") -> (loss [Q], weight [Q])`` (``key`` unused).
triplet_queries = TRIPLET.per_query


def triplet_per_query(
  sim: jax.Array, positives: jax.Array, where: jax.Array, *, margin: float, mining: Mining
) -> tuple[jax.Array, jax.Array]:
  """:func:`triplet_query` of each row of ``[Q, C]`` arrays as they are (padding not
  cleared, nothing checked): ``(loss [Q], weight [Q])``."""
  one = functools.partial(triplet_query, margin=margin, mining=mining)
  return jax.vmap(one)(qr.Query(sim, positives, where, None, None))


triplet = TRIPLET.function(
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
)
