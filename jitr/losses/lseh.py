"""LSEH: hard negatives raised by semantic similarity (seed 004, eq. 8)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jitr.losses import _masks, checks, vse


def semantic_hard_negatives_queries(
  rows: _masks.QueryRows,
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
  rows = _masks.without_padding(rows)
  lift = semantic_weight * rows.graded.astype(rows.sim.dtype)
  shifted = rows.sim + jnp.where(rows.positives, 0.0, lift)
  loss, weight = vse.triplet_per_query(
    shifted, rows.positives, rows.where, margin=margin, mining="max"
  )
  return checks.propagate_nonfinite(loss, rows.where, rows.sim, rows.graded), weight


def semantic_hard_negatives(
  sim: jax.Array,
  semantic: jax.Array,
  *,
  positives: jax.Array | None = None,
  where: jax.Array | None = None,
  margin: float = 0.185,
  semantic_weight: float = 0.025,
  reduction: _masks.Reduction = "mean",
) -> jax.Array | _masks.DirectionalLoss:
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
  checks.check_choice("reduction", reduction, _masks.REDUCTIONS)
  positives, where = _masks.resolve_masks(sim, positives, where)
  if semantic.shape != sim.shape:
    raise ValueError(f"semantic: expected shape {sim.shape} like sim, got {semantic.shape}")
  rows = _masks.query_rows(sim, positives, where, semantic)
  losses = _masks.per_direction(
    semantic_hard_negatives_queries, rows, margin=margin, semantic_weight=semantic_weight
  )
  return _masks.reduce_directions(losses, reduction=reduction)
