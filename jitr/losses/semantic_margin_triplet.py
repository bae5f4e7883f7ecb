"""The semantic adaptive margin triplet of SAM (Biten et al., "Is An Image Worth Five
Sentences? A New Look into Semantics for Image-Text Matching", WACV 2022, eq. 7): a triplet
loss whose margin comes from a captioning metric."""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

from jitr.losses import checks
from jitr.losses import query_rows as qr
from jitr.losses.triplet import triplet, triplet_queries

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


def _semantic_margin_row(
  scores, metric, positives, where, key, *, sampling, temperature, max_margin
):
  pos = positives & where
  neg = where & ~positives
  has_neg = jnp.any(neg)
  m = choose_negative(scores, neg, sampling=sampling, key=key)
  margin = (metric - metric[m]) / temperature  # one margin per positive p
  if max_margin is not None:
    margin = jnp.minimum(margin, max_margin)
  hinge = jnp.where(has_neg, jax.nn.relu(margin + scores[m] - scores), 0.0)
  n_pos = jnp.sum(pos)
  return jnp.sum(jnp.where(pos, hinge, 0.0)) / jnp.maximum(n_pos, 1), n_pos > 0


def semantic_margin_queries(
  rows: qr.QueryRows,
  *,
  key: jax.Array | None = None,
  temperature: float = 5.0,
  sampling: Sampling = "hard",
  max_margin: float | None = None,
  keep_triplet: bool = False,
  triplet_margin: float = 0.2,
) -> tuple[jax.Array, jax.Array]:
  """The per-query core of :func:`semantic_margin_triplet`; ``rows.graded`` is φ.

  Random negatives use one key per query, ``fold_in(split(key)[direction],
  global_row)``, so the draw does not depend on how queries are split over
  devices. ``keep_triplet`` adds the VSE++ LMH term of the same query (both
  count for the same queries, so the mean of the sum is the sum of the means).
  """
  if rows.graded is None:
    raise ValueError("semantic_margin_triplet: needs a metric matrix (rows.graded is None)")
  checks.check_positive("temperature", temperature)
  checks.check_choice("sampling", sampling, ("hard", "soft", "random"))
  if max_margin is not None:
    checks.check_nonnegative("max_margin", max_margin)
  checks.check_bool("keep_triplet", keep_triplet)
  checks.check_nonnegative("triplet_margin", triplet_margin)
  if sampling == "random" and key is None:
    raise ValueError("key: sampling='random' needs an explicit jax.random key")
  rows = qr.without_padding(rows)
  if rows.sim.shape[-1] == 0:  # no candidates: no query counts
    return jnp.zeros(rows.sim.shape[:1], rows.sim.dtype), jnp.zeros(rows.sim.shape[:1], bool)
  keys = qr.row_keys(key, rows) if sampling == "random" else None
  row = jax.vmap(
    lambda s, phi, p, w, k: _semantic_margin_row(
      s, phi, p, w, k, sampling=sampling, temperature=temperature, max_margin=max_margin
    ),
    in_axes=(0, 0, 0, 0, None if keys is None else 0),
  )
  loss, weight = row(rows.sim, rows.graded.astype(rows.sim.dtype), rows.positives, rows.where, keys)
  if keep_triplet:
    loss = loss + triplet_queries(rows, margin=triplet_margin, mining="max")[0]
  return checks.propagate_nonfinite(loss, rows.where, rows.sim, rows.graded), weight


def semantic_margin_triplet(
  sim: jax.Array,
  metric: jax.Array,
  *,
  positives: jax.Array | None = None,
  where: jax.Array | None = None,
  temperature: float = 5.0,
  sampling: Sampling = "hard",
  key: jax.Array | None = None,
  max_margin: float | None = None,
  keep_triplet: bool = False,
  triplet_margin: float = 0.2,
  reduction: qr.Reduction = "mean",
) -> jax.Array | qr.DirectionalLoss:
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
    reduction: ``"mean"``, ``"sum"`` or ``"none"`` (SAM term only).
  """
  checks.check_bool("keep_triplet", keep_triplet)
  checks.check_nonnegative("triplet_margin", triplet_margin)
  total = qr.both_ways(
    semantic_margin_queries,
    sim,
    positives=positives,
    where=where,
    graded=metric,
    graded_name="metric",
    reduction=reduction,
    key=key,
    temperature=temperature,
    sampling=sampling,
    max_margin=max_margin,
  )
  if keep_triplet and reduction != "none":
    total = total + triplet(
      sim, positives=positives, where=where, margin=triplet_margin, reduction=reduction
    )
  return total
