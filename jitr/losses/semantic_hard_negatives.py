"""The LSEH triplet (Gong and Cosma, "Improving visual-semantic embeddings by learning
semantically-enhanced hard negatives for cross-modal information retrieval", Pattern
Recognition 2023, eq. 8): hard negatives raised by semantic similarity."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jitr.losses import checks
from jitr.losses import query_rows as qr
from jitr.losses.triplet import triplet_query


def semantic_hard_negatives_query(
  query: qr.Query, *, margin: float = 0.185, semantic_weight: float = 0.025
) -> tuple[jax.Array, jax.Array]:
  """One query's ``mean_p [α + max_n (s_n + λ·S_n) − s_p]_+`` over its valid positives p
  and valid negatives n (``S = query.graded``, α the margin, λ the semantic weight), and
  whether it counts (it has a valid positive).

  Raising the negatives by λ·S is the plain LMH triplet
  (:func:`!jitr.losses.triplet.triplet_query`) on the shifted scores; positives keep their
  own score.
  """
  lift = semantic_weight * query.graded.astype(query.sim.dtype)
  shifted = query._replace(sim=query.sim + jnp.where(query.positives, 0.0, lift))
  return triplet_query(shifted, margin=margin, mining="max")


#: The LSEH loss, written once as :func:`semantic_hard_negatives_query`.
SEMANTIC_HARD_NEGATIVES = qr.QueryLoss(
  semantic_hard_negatives_query,
  ranges={"margin": checks.NONNEGATIVE, "semantic_weight": checks.FINITE},
  graded="semantic",
)

#: The core of :func:`semantic_hard_negatives` on a block of query rows; ``rows.graded``
#: is S (``key`` unused).
semantic_hard_negatives_queries = SEMANTIC_HARD_NEGATIVES.per_query

semantic_hard_negatives = SEMANTIC_HARD_NEGATIVES.function(
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
)
