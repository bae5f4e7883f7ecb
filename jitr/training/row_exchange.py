"""What crosses devices in the data-parallel train step, and nothing else.

The step splits the loss by **query rows**. With ``D`` devices on the ``batch`` axis and a
global batch of ``N`` (image, caption) pairs, device ``d`` holds the ``b = N/D`` pairs
``d·b .. d·b + b − 1`` and computes the terms of its own queries only: its images against
all ``N`` captions and its captions against all ``N`` images, the ``[b, N]`` blocks ``i2t``
and ``t2i`` of the global ``sim [N, N]``. What travels between devices:

- **before the loss** (:func:`device_queries`, :func:`query_rows`): the batch's non-model
  fields (ids, validity, stored relevance data) and the representations, all-gathered
  (``[b, …] -> [N, …]``); for a similarity model one ``all_to_all`` of score blocks
  instead of a second gather;
- **inside the loss**: only the *counts* of the queries that count (``psum`` of masks, no
  gradient; :func:`psum`), so each device's share has its own numerators over the global
  counts and the shares of all devices add up to the loss;
- **after the gradient** (:func:`reduce_across_devices`): the ``psum`` of the gradients
  (the sum of each device's gradient of its share is the gradient of the loss) and the
  ``pmean`` of the model's mutated collections.

Every function takes ``axis_name``; ``None`` is the single-device step, where nothing
crosses and each function is the identity on the global batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jitr import losses
from jitr.data.batch_keys import POSITIVE_CLASSES
from jitr.models.retrieval_model import RetrievalModel

Batch = Mapping[str, jax.Array]
# (image-side rows, caption-side rows, positives [n_img, n_txt]) -> {name: [n_img, n_txt]},
# e.g. {"relevance": ...}; see jitr.training.graded.make_graded_fn.
GradedFn = Callable[[Batch, Batch, jax.Array], Mapping[str, jax.Array]]


def gather(x: jax.Array, axis_name: str | None) -> jax.Array:
  """``[b, …] -> [N, …]``: every device's rows, in global row order (``all_gather``)."""
  return x if axis_name is None else jax.lax.all_gather(x, axis_name, tiled=True)


def psum(tree, axis_name: str | None):
  """The sum over devices of every leaf of ``tree`` (``psum``)."""
  return tree if axis_name is None else jax.lax.psum(tree, axis_name)


def as_varying(params, axis_name: str | None):
  """``params`` marked as varying over ``axis_name``: differentiating each device's own
  share then gives per-device gradients (summed by :func:`reduce_across_devices`)."""
  return params if axis_name is None else jax.lax.pcast(params, axis_name, to="varying")


def device_key(key: jax.Array, axis_name: str | None) -> jax.Array:
  """``key`` folded with the device index: each device draws its own dropout."""
  return key if axis_name is None else jax.random.fold_in(key, jax.lax.axis_index(axis_name))


def query_targets(queries: Batch, candidates: Batch) -> tuple[jax.Array, jax.Array]:
  """``positives [Q, C]`` and ``where [Q, C]`` of some pairs' queries against all candidates.

  The same for both directions: image i and caption j match when their pairs
  share an image id, whichever side is the query, or, for a batch with
  ``positive_classes`` (a labelled vector dataset, :mod:`!jitr.data.batch_keys`), when
  their pairs share a class (:func:`jitr.losses.shares_a_label`).
  """
  ids_q, ids_c = queries["image_ids"], candidates["image_ids"]
  valid_q = queries.get("valid", jnp.ones(ids_q.shape, bool))
  valid_c = candidates.get("valid", jnp.ones(ids_c.shape, bool))
  positives = ids_q[:, None] == ids_c[None, :]
  if POSITIVE_CLASSES in queries:
    shared = losses.shares_a_label(queries[POSITIVE_CLASSES], candidates[POSITIVE_CLASSES])
    positives = positives | shared
  return positives, losses.pair_mask(valid_q, valid_c)


class DeviceQueries(NamedTuple):
  """This device's ``b`` queries against the global batch of ``N`` pairs.

  Attributes:
    index: int ``[b]`` global index of each query (device d holds ``d·b .. d·b + b − 1``).
    positives: bool ``[b, N]`` annotated pairs (the same for both directions).
    where: bool ``[b, N]`` valid pairs.
    valid: bool ``[b]`` the device's valid rows.
    graded: ``{name: (image-query rows [b, N], caption-query rows [b, N])}`` of
      ``graded_fn`` (``{}`` without one).
  """

  index: jax.Array
  positives: jax.Array
  where: jax.Array
  valid: jax.Array
  graded: dict[str, tuple[jax.Array, jax.Array]]


def device_queries(
  fields: Batch, graded_fn: GradedFn | None, axis_name: str | None
) -> DeviceQueries:
  """This device's queries from ``fields``, the non-model fields of its rows (ids,
  validity, stored relevance data).

  Crosses devices: ``fields`` all-gathered (:func:`gather`); everything else is computed
  from them on the device: its global row indices, its targets (:func:`query_targets`)
  and its graded rows (:func:`graded_rows`).
  """
  shared = {k: gather(v, axis_name) for k, v in fields.items()}
  rows_here = fields["image_ids"].shape[0]
  start = 0 if axis_name is None else jax.lax.axis_index(axis_name) * rows_here
  return queries_of(fields, shared, start + jnp.arange(rows_here), graded_fn)


def queries_of(
  local: Batch, shared: Batch, index: jax.Array, graded_fn: GradedFn | None
) -> DeviceQueries:
  """The queries of some rows: ``local``, their non-model fields, ``index`` their global
  indices, against the global batch's fields ``shared`` (its targets and graded rows)."""
  positives, where = query_targets(local, shared)
  valid = local.get("valid", jnp.ones(index.shape, bool))
  graded = {} if graded_fn is None else graded_rows(graded_fn, local, shared, index, positives)
  return DeviceQueries(index, positives, where, valid, graded)


def graded_rows(
  graded_fn: GradedFn, local: Batch, shared: Batch, index: jax.Array, positives: jax.Array
) -> dict[str, tuple[jax.Array, jax.Array]]:
  """``{name: (rows, columns.T)}`` of ``graded_fn``, each ``[b, N]``: this device's images
  against all captions and all images against its captions, never the whole ``[N, N]``.

  ``local`` / ``shared``: the non-model fields of this device's rows / of the global
  batch; ``index``: the global indices of ``local``'s rows; ``positives [b, N]``.
  """
  mine = {**local, "pair_index": index}
  every = {**shared, "pair_index": jnp.arange(shared["image_ids"].shape[0])}
  i2t = graded_fn(mine, every, positives)
  t2i = graded_fn(every, mine, query_targets(shared, local)[0])
  return {name: (i2t[name], t2i[name].T) for name in i2t}


def query_rows(
  model: RetrievalModel,
  variables: Mapping,
  images,
  captions,
  *,
  train: bool,
  rngs: Mapping[str, jax.Array] | None,
  axis_name: str | None,
) -> tuple[jax.Array, jax.Array, dict]:
  """``(i2t [b, N], t2i [b, N], new_state)``: this device's query rows of the global ``sim``.

  ``images, captions``: the representations of this device's ``b`` rows. What crosses:

  - embedding models (``pairwise=False``): both sides all-gathered,
    ``i2t = score(img_l, gather(txt))`` and ``t2i = score(gather(img), txt_l).T``
    (``O(N·b)`` dot products each);
  - similarity models (``pairwise=True``): the images all-gathered and scored against the
    device's captions once, ``cols = score(gather(img), txt_l) [N, b]``; ``t2i = cols.T``
    and ``i2t`` = this device's rows of ``all_gather(cols, axis=1)``, received by one
    ``all_to_all`` (row block d of every device's ``cols`` goes to device d; its
    transpose, the reverse ``all_to_all``, carries the gradients back). The ``N×N`` pairs
    are scored once over all devices, with ``O(N·b)`` traffic instead of ``O(N²)``.

  ``new_state``: the collections the scoring mutated (both calls' for an embedding model).
  """
  score = lambda img, txt: model.score(  # noqa: E731
    variables, img, txt, train=train, rngs=rngs, axis_name=axis_name
  )
  if not model.pairwise:
    i2t, state_a = score(images, gather(captions, axis_name))
    t2i, state_b = score(gather(images, axis_name), captions)
    return i2t, t2i.T, {**state_a, **state_b}
  cols, state = score(gather(images, axis_name), captions)
  if axis_name is None:
    return cols, cols.T, state
  i2t = jax.lax.all_to_all(cols, axis_name, split_axis=0, concat_axis=1, tiled=True)
  return i2t, cols.T, state


def reduce_across_devices(grads, model_state: Mapping, axis_name: str | None):
  """``(psum(grads), pmean(model_state))`` over ``axis_name``: the sum of each device's
  gradient of its share is the gradient of the loss; the model state is the same on every
  device (the models synchronise their statistics), the mean keeps it so."""
  grads = psum(grads, axis_name)
  if axis_name is not None:
    model_state = jax.lax.pmean(model_state, axis_name)
  return grads, model_state
