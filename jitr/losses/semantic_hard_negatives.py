"""The LSEH triplet (Gong and Cosma, "Improving visual-semantic embeddings by learning
semantically-enhanced hard negatives for cross-modal information retrieval", Pattern
Recognition 2023, eq. 8): hard negatives raised by semantic similarity."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jitr.losses import checks
from jitr.losses import query_rows as qr
from jitr.losses.triplet import triplet_per_query


def semantic_hard_negatives_queries(
  rows: qr.QueryRows,
  *,
  key: jax.Array | None = None,
  margin: float = 0.185,
  semantic_weight: float = 0.025,
) -> tuple[jax.Array, jax.Array]:
  """The per-query core of :func:`semantic_hard_negatives`; ``rows.graded`` is S.

  Raising negatives by λ·S is the plain LMH triplet on the shifted scores;
  positives keep their own score (the shift only applies where ~positives).
  """
  del key
  if rows.graded is None:
    raise ValueError("semantic_hard_negatives: needs a semantic matrix (rows.graded is None)")
  checks.check_nonnegative("margin", margin)
  checks.check_finite("semantic_weight", semantic_weight)
  rows = qr.without_padding(rows)
  lift = semantic_weight * rows.graded.astype(rows.sim.dtype)
  shifted = rows.sim + jnp.where(rows.positives, 0.0, lift)
  loss, weight = triplet_per_query(shifted, rows.positives, rows.where, margin=margin, mining="max")
  return checks.propagate_nonfinite(loss, rows.where, rows.sim, rows.graded), weight


def semantic_hard_negatives(
  sim: jax.Array,
  semantic: jax.Array,
  *,
  positives: jax.Array | None = None,
  where: jax.Array | None = None,
  margin: float = 0.185,
  semantic_weight: float = 0.025,
  reduction: qr.Reduction = "mean",
) -> jax.Array | qr.DirectionalLoss:
  """LSEH triplet: ``max_j [α + s_ij + λ·S(D_i, D_j) − s_ii]_+`` in both directions.

  The semantic similarity ``S`` (cosine of TF-IDF + SVD caption vectors) raises
  the score of semantically close negatives before the hardest one is taken,
  so near-duplicates are not pushed away as hard as unrelated captions.
  Text->image uses ``S.T``. Positives are never negatives.

  Args:
    sim: ``[N_img, N_txt]`` similarities.
    semantic: ``[N_img, N_txt]`` semantic similarity S between image i's
      description and caption j.
    positives: bool annotated pairs (default: identity).
    where: bool mask of valid pairs, broadcastable to ``sim``.
    margin: α (0.185).
    semantic_weight: λ (0.025).
    reduction: ``"mean"``, ``"sum"`` or ``"none"``.

  >>> import jax.numpy as jnp
  >>> sim = jnp.array([[0.5, 0.4], [0.0, 0.5]])
  >>> sem = jnp.array([[1.0, 0.8], [0.8, 1.0]])
  >>> # 2 × (.185 + .4 + .025·.8 − .5)
  >>> round(float(semantic_hard_negatives(sim, sem, reduction="sum")), 4)
  0.21
  """
  return qr.both_ways(
    semantic_hard_negatives_queries,
    sim,
    positives=positives,
    where=where,
    graded=semantic,
    graded_name="semantic",
    reduction=reduction,
    margin=margin,
    semantic_weight=semantic_weight,
  )
