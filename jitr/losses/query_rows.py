"""Query rows, masks and directions: the one shape every loss of :mod:`jitr.losses` has.

A similarity matrix ``sim [N_img, N_txt]`` has image queries on its rows and caption
candidates on its columns; text->image is the same computation on ``sim.T`` (and on the
transposed masks and graded matrix). Masks follow rax: ``where`` marks valid entries
(padding is ``False``), ``positives`` marks annotated pairs (several captions of one
image are all positives, never negatives).

Every loss is one per-query core on a block of query rows of one direction,
``core(rows: QueryRows, *, key, **hyper) -> (loss [Q], weight [Q])``, and its
whole-matrix function is :func:`both_ways` of that core. The registry
(:data:`jitr.losses.LOSSES`), ``objective`` and the data-parallel train step call the
same cores on any block of rows (a device's own queries against all candidates).

Reduction (``reduction=``, every loss):

* ``"mean"`` (default): ``a·Σ_i w_i·l_i / max(Σ_i w_i, 1) + b·Σ_j w_j·l_j / max(Σ_j w_j, 1)``
  over image queries i and caption queries j, the mean of each direction over the
  queries that count (weight 1; padded or degenerate queries have weight 0);
* ``"sum"``: ``a·Σ_i w_i·l_i + b·Σ_j w_j·l_j`` (the VSE++ / SAM code's convention);
* ``"none"``: the per-query values and weights as a :class:`~jitr.losses.DirectionalLoss`, not
  weighted by direction.

``a`` and ``b`` are the direction weights (1 and 1; CMAL²R's α and 1 − α). A query of
weight 0 never contributes, even when its loss is not finite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

import chex
import jax
import jax.numpy as jnp

from jitr.losses import checks

Reduction = Literal["mean", "sum", "none"]
REDUCTIONS = ("mean", "sum", "none")

#: ``QueryRows.direction`` of image queries (rows of ``sim``) and caption queries (rows of
#: ``sim.T``).
IMAGE_TO_TEXT, TEXT_TO_IMAGE = 0, 1


class DirectionalLoss(NamedTuple):
  """Per-query losses of both directions (``reduction="none"``).

  Attributes:
    image_to_text: ``[N_img]`` loss of each image query (rows of ``sim``).
    text_to_image: ``[N_txt]`` loss of each caption query (columns of ``sim``).
    image_weight: ``[N_img]`` 1 for queries that count, 0 for padded or
      degenerate ones (no valid positive / no relevant item).
    text_weight: ``[N_txt]`` the same for caption queries.
  """

  image_to_text: jax.Array
  text_to_image: jax.Array
  image_weight: jax.Array
  text_weight: jax.Array


class QueryRows(NamedTuple):
  """A block of query rows of one direction: what a per-query loss core sees.

  Every loss is a per-query core ``core(rows, *, key, **hyper) -> (loss [Q],
  weight [Q])``; the full loss is the core on all image queries (rows of
  ``sim``) and all caption queries (rows of ``sim.T``), reduced as the module
  documentation says. Because a query's terms only need its own row, a
  device can compute the terms of its own queries against the gathered
  candidates and the partial sums are added across devices (see
  ``jitr.training.step``).

  Attributes:
    sim: ``[Q, C]`` scores of each query against every candidate.
    positives: bool ``[Q, C]`` annotated pairs.
    where: bool ``[Q, C]`` valid pairs.
    graded: ``[Q, C]`` graded matrix rows (relevance, metric, semantic) or None.
    index: int ``[Q]`` global index of each query in its direction (random
      draws are keyed by it, so they do not depend on how rows are split).
    direction: :data:`!IMAGE_TO_TEXT` or :data:`!TEXT_TO_IMAGE` (a Python int).
  """

  sim: jax.Array
  positives: jax.Array
  where: jax.Array
  graded: jax.Array | None
  index: jax.Array
  direction: int


Core = Callable[..., tuple[jax.Array, jax.Array]]


def directions(
  sim: jax.Array,
  positives: jax.Array,
  where: jax.Array,
  graded: jax.Array | None = None,
) -> tuple[QueryRows, QueryRows]:
  """All image queries (rows of ``sim``) and all caption queries (rows of ``sim.T``)."""
  n_img, n_txt = sim.shape
  gt = None if graded is None else graded.T
  return (
    QueryRows(sim, positives, where, graded, jnp.arange(n_img), IMAGE_TO_TEXT),
    QueryRows(sim.T, positives.T, where.T, gt, jnp.arange(n_txt), TEXT_TO_IMAGE),
  )


def without_padding(rows: QueryRows) -> QueryRows:
  """``rows`` with the padded entries (``where`` False) of ``sim`` and ``graded`` set to 0.

  Every per-query core starts with it, so padding never matters to a loss or
  its gradient, even when NaN, however the rows were built (the train step
  builds them per device).
  """
  sim = jnp.where(rows.where, rows.sim, jnp.zeros((), rows.sim.dtype))
  graded = rows.graded
  if graded is not None:
    graded = jnp.where(rows.where, graded, jnp.zeros((), graded.dtype))
  return rows._replace(sim=sim, graded=graded)


def row_keys(key: jax.Array, rows: QueryRows) -> jax.Array:
  """One key per query: ``fold_in(split(key)[direction], global_index)``.

  Independent of how the queries are split into blocks (or devices).
  """
  direction_key = jax.random.split(key)[rows.direction]
  return jax.vmap(lambda i: jax.random.fold_in(direction_key, i))(rows.index)


def resolve_masks(
  sim: jax.Array,
  positives: jax.Array | None,
  where: jax.Array | None,
) -> tuple[jax.Array, jax.Array]:
  """Returns boolean ``(positives, where)`` of ``sim``'s shape.

  ``positives`` defaults to the identity (one caption per image, matched on the
  diagonal), which needs a square ``sim``; ``where`` defaults to all valid and
  may be anything broadcastable to ``sim.shape`` (e.g. ``img_valid[:, None] &
  txt_valid[None, :]``, see :func:`pair_mask`).
  """
  chex.assert_rank(sim, 2)
  n_img, n_txt = sim.shape
  if positives is None:
    if n_img != n_txt:
      raise ValueError(
        f"positives: required when sim is not square (sim has shape "
        f"{sim.shape}); pass a bool [N_img, N_txt] mask of annotated pairs"
      )
    positives = jnp.eye(n_img, dtype=bool)
  else:
    chex.assert_shape(positives, sim.shape)
    positives = positives.astype(bool)
  if where is None:
    where = jnp.ones(sim.shape, dtype=bool)
  else:
    where = jnp.broadcast_to(where, sim.shape).astype(bool)
  return positives, where


def pair_mask(image_valid: jax.Array, text_valid: jax.Array) -> jax.Array:
  """``where`` for a padded batch: ``where[i, j] = image_valid[i] & text_valid[j]``."""
  chex.assert_rank([image_valid, text_valid], 1)
  return image_valid.astype(bool)[:, None] & text_valid.astype(bool)[None, :]


def masked_mean(values: jax.Array, weights: jax.Array) -> jax.Array:
  """``Σ w·v / max(Σ w, 1)`` with zero-weight entries ignored even if not finite."""
  return masked_sum(values, weights) / jnp.maximum(jnp.sum(weights), 1.0)


def masked_sum(values: jax.Array, weights: jax.Array) -> jax.Array:
  """``Σ w·v`` with zero-weight entries ignored even if not finite."""
  return jnp.sum(jnp.where(weights > 0, values * weights, 0.0))


def both_ways(
  core: Core,
  sim: jax.Array,
  *,
  positives: jax.Array | None = None,
  where: jax.Array | None = None,
  graded: jax.Array | None = None,
  graded_name: str = "graded",
  reduction: Reduction = "mean",
  image_to_text_weight: float = 1.0,
  text_to_image_weight: float = 1.0,
  **hyper,
) -> jax.Array | DirectionalLoss:
  """A per-query ``core`` on a whole matrix: image->text on ``sim``, text->image on ``sim.T``.

  Resolves the masks (:func:`!resolve_masks`), checks that ``graded`` (named
  ``graded_name`` in the error) has ``sim``'s shape, runs ``core(rows, **hyper)`` on
  the image queries and on the caption queries, and reduces them by ``reduction``
  with the direction weights (module documentation).

  A core of one's own becomes a loss of the whole matrix, both directions reduced:

  >>> import jax.numpy as jnp
  >>> def hardest_negative(rows, *, key=None):  # per query: its highest negative score
  ...   negatives = rows.where & ~rows.positives
  ...   scores = jnp.where(negatives, rows.sim, -jnp.inf)
  ...   return jnp.max(scores, axis=-1), jnp.any(negatives, axis=-1)
  >>> sim = jnp.array([[0.9, 0.3], [0.2, 0.8]])
  >>> round(float(both_ways(hardest_negative, sim)), 6)  # mean(.3, .2) + mean(.2, .3)
  0.5
  >>> round(float(both_ways(hardest_negative, sim, reduction="sum")), 6)
  1.0
  """
  checks.check_choice("reduction", reduction, REDUCTIONS)
  positives, where = resolve_masks(sim, positives, where)
  if graded is not None and graded.shape != sim.shape:
    raise ValueError(f"{graded_name}: expected shape {sim.shape} like sim, got {graded.shape}")
  (i2t, w_i2t), (t2i, w_t2i) = (
    core(rows, **hyper) for rows in directions(sim, positives, where, graded)
  )
  losses = DirectionalLoss(i2t, t2i, w_i2t.astype(sim.dtype), w_t2i.astype(sim.dtype))
  if reduction == "none":
    return losses
  reduce = masked_mean if reduction == "mean" else masked_sum
  return image_to_text_weight * reduce(
    losses.image_to_text, losses.image_weight
  ) + text_to_image_weight * reduce(losses.text_to_image, losses.text_weight)
