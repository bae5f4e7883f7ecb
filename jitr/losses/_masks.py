"""Mask handling and the two-direction reduction shared by every loss.

Conventions (rax's): ``where`` marks valid entries (padding is ``False``),
``positives`` marks annotated positives. A similarity matrix ``sim`` has image
queries on rows and caption candidates on columns; text->image is the same
computation on ``sim.T`` (and the transposed masks and relevance).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

import chex
import jax
import jax.numpy as jnp

Reduction = Literal["mean", "sum", "none"]
REDUCTIONS = ("mean", "sum", "none")


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


IMAGE_TO_TEXT, TEXT_TO_IMAGE = 0, 1


class QueryRows(NamedTuple):
  """A block of query rows of one direction: what a per-query loss core sees.

  Every loss is a per-query core ``core(rows, *, key, **hyper) -> (loss [Q],
  weight [Q])``; the full loss is the core on all image queries (rows of
  ``sim``) and all caption queries (rows of ``sim.T``), each direction reduced
  ``Σ_q w_q·l_q / Σ_q w_q``. Because a query's terms only need its own row, a
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


def query_rows(
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


def per_direction(
  core: Callable[..., tuple[jax.Array, jax.Array]],
  rows: tuple[QueryRows, QueryRows],
  **kwargs,
) -> DirectionalLoss:
  """``core(rows, **kwargs)`` on both directions, as a :class:`DirectionalLoss`."""
  (i2t, w_i2t), (t2i, w_t2i) = (core(r, **kwargs) for r in rows)
  dtype = rows[0].sim.dtype
  return DirectionalLoss(i2t, t2i, w_i2t.astype(dtype), w_t2i.astype(dtype))


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
  total = jnp.sum(jnp.where(weights > 0, values * weights, 0.0))
  return total / jnp.maximum(jnp.sum(weights), 1.0)


def masked_sum(values: jax.Array, weights: jax.Array) -> jax.Array:
  """``Σ w·v`` with zero-weight entries ignored even if not finite."""
  return jnp.sum(jnp.where(weights > 0, values * weights, 0.0))


def both_directions(
  per_query: Callable[..., tuple[jax.Array, jax.Array]],
  sim: jax.Array,
  *matrices: jax.Array,
) -> DirectionalLoss:
  """Applies a direction-free loss to ``sim`` (image->text) and ``sim.T``.

  ``per_query(sim, *matrices)`` maps ``[Q, C]`` arrays to ``(loss [Q],
  weight [Q])``; every matrix is transposed with ``sim`` for text->image.
  """
  i2t, w_i2t = per_query(sim, *matrices)
  t2i, w_t2i = per_query(sim.T, *(m.T for m in matrices))
  return DirectionalLoss(i2t, t2i, w_i2t.astype(sim.dtype), w_t2i.astype(sim.dtype))


def reduce_directions(
  losses: DirectionalLoss,
  *,
  reduction: Reduction,
  image_to_text_weight: float = 1.0,
  text_to_image_weight: float = 1.0,
) -> jax.Array | DirectionalLoss:
  """Reduces per-query losses to a scalar.

  ``"mean"``: ``a·mean_i(l_i2t) + b·mean_j(l_t2i)`` over the queries that count;
  ``"sum"``: the same with sums (the VSE++ convention); ``"none"``: the
  :class:`DirectionalLoss` itself. ``a``, ``b`` are the direction weights.
  """
  if reduction == "none":
    return losses
  if reduction == "mean":
    reduce = masked_mean
  elif reduction == "sum":
    reduce = masked_sum
  else:
    raise ValueError(f"reduction: expected 'mean', 'sum' or 'none', got {reduction!r}")
  return image_to_text_weight * reduce(
    losses.image_to_text, losses.image_weight
  ) + text_to_image_weight * reduce(losses.text_to_image, losses.text_weight)
