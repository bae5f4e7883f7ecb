"""The semantic adaptive margin triplet of SAM (Biten et al., "Is An Image Worth Five
Sentences? A New Look into Semantics for Image-Text Matching", WACV 2022, eq. 7): a triplet
loss whose margin comes from a captioning metric."""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

from jitr.losses import checks
from jitr.losses import query_rows as qr
from jitr.losses.triplet import triplet_query

Sampling = Literal["hard", "soft", "random"]


def choose_negative(
  scores: jax.Array,
  negatives: jax.Array,
  *,
  sampling: Sampling,
  key: jax.Array | None,
) -> jax.Array:
  """Index of the negative of one row: ``hard`` = highest score, ``soft`` = the
  furthest (lowest score), ``random`` = uniform over the valid negatives.

  (The official SAM code's ``hard`` takes the second-lowest score of
  ``s − s_pos`` and its ``soft`` the second-highest; jitr names them by what
  they pick.)
  """
  scores = jax.lax.stop_gradient(scores)
  if sampling == "hard":
    return jnp.argmax(jnp.where(negatives, scores, -jnp.inf))
  if sampling == "soft":
    return jnp.argmin(jnp.where(negatives, scores, jnp.inf))
  if sampling == "random":
    if key is None:
      raise ValueError("key: sampling='random' needs an explicit jax.random key")
    return jax.random.categorical(key, jnp.where(negatives, 0.0, -jnp.inf))
  raise ValueError(f"sampling: expected 'hard', 'soft' or 'random', got {sampling!r}")


def semantic_margin_triplet_query(
  query: qr.Query,
  *,
  temperature: float = 5.0,
  sampling: Sampling = "hard",
  max_margin: float | None = None,
  keep_triplet: bool = False,
  triplet_margin: float = 0.2,
) -> tuple[jax.Array, jax.Array]:
  """One query's SAM loss and whether it counts (it has a valid positive).

  With one negative m of the query (:func:`choose_negative`, ``query.key`` for
  ``"random"``) and ``φ = query.graded``: ``mean_p [α_p + s_m − s_p]_+`` over the valid
  positives p, ``α_p = (φ_p − φ_m)/τ``, clipped at ``max_margin`` when it is set;
  ``keep_triplet`` adds the VSE++ LMH triplet of the query with ``triplet_margin``
  (:func:`!jitr.losses.triplet.triplet_query`; it counts for the same queries, so the
  mean of the sum is the sum of the means). No candidate: loss 0, not counted.
  """
  scores, positives, where = query.sim, query.positives, query.where
  if scores.shape[-1] == 0:  # no candidates: no query counts
    return jnp.zeros((), scores.dtype), jnp.zeros((), bool)
  metric = query.graded.astype(scores.dtype)
  pos = positives & where
  neg = where & ~positives
  has_neg = jnp.any(neg)
  m = choose_negative(scores, neg, sampling=sampling, key=query.key)
  margin = (metric - metric[m]) / temperature  # one margin per positive p
  if max_margin is not None:
    margin = jnp.minimum(margin, max_margin)
  hinge = jnp.where(has_neg, jax.nn.relu(margin + scores[m] - scores), 0.0)
  n_pos = jnp.sum(pos)
  loss = jnp.sum(jnp.where(pos, hinge, 0.0)) / jnp.maximum(n_pos, 1)
  if keep_triplet:
    loss = loss + triplet_query(query, margin=triplet_margin, mining="max")[0]
  return loss, n_pos > 0


#: The SAM loss, written once as :func:`semantic_margin_triplet_query`; random negatives
#: use one key per query, ``fold_in(split(key)[direction], global_row)``, so the draw does
#: not depend on how queries are split over devices.
SEMANTIC_MARGIN_TRIPLET = qr.QueryLoss(
  semantic_margin_triplet_query,
  ranges={
    "temperature": checks.POSITIVE,
    "sampling": checks.Choice(("hard", "soft", "random")),
    "max_margin": checks.Bound(0.0, optional=True),
    "keep_triplet": checks.SWITCH,
    "triplet_margin": checks.NONNEGATIVE,
  },
  graded="metric",
  needs_key=True,
)

#: The core of :func:`semantic_margin_triplet` on a block of query rows; ``rows.graded``
#: is φ.
semantic_margin_queries = SEMANTIC_MARGIN_TRIPLET.per_query

semantic_margin_triplet = SEMANTIC_MARGIN_TRIPLET.function(
  """SAM semantic adaptive margin triplet loss in both directions.

  For query p with positive c_p and one sampled negative c_m:
  ``[α + s_pm − s_pp]_+`` with ``α = (φ(G_p, c_p) − φ(G_p, c_m))/τ`` (image->text)
  where ``φ(G_i, c_j) = metric[i, j]`` (CIDEr-D of caption j against image i's
  references); text->image uses the transposed ``metric``, so the margin of a
  caption query against negative image m is ``(φ(G_p, c_p) − φ(G_m, c_p))/τ``.
  Negative margins (a negative that scores higher than the positive) are kept.

  Args:
    sim: ``[N_img, N_txt]`` similarities.
    metric: ``[N_img, N_txt]`` captioning-metric scores φ (not forced to 1 on
      positives: φ(G_p, c_p) is what the metric says).
    positives: bool annotated pairs (default: identity).
    where: bool mask of valid pairs, broadcastable to ``sim``.
    temperature: τ ∈ {3, 5, 10} in the paper.
    sampling: ``"hard"``, ``"soft"`` (furthest) or ``"random"``.
    key: ``jax.random`` key, required for ``"random"``.
    max_margin: optional upper clip of α (the official code clips at 1.0).
    keep_triplet: add the original VSE++ LMH triplet with ``triplet_margin``.
    triplet_margin: the margin of the kept triplet (0.2).
    reduction: ``"mean"``, ``"sum"`` or ``"none"`` (per query: the SAM term plus the
      kept triplet).
  """
)
