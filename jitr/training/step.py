"""The pure train step: model -> query rows -> relevance -> objective (+ aux) -> optax.

Data parallelism splits the loss by **query rows**. The model
(:class:`jitr.models.retrieval_model.RetrievalModel`) represents the device's ``b``
rows; device d then needs its image queries' row block ``i2t [b, N]`` and its
caption queries' ``t2i [b, N]`` of the global ``sim [N, N]``:

- embedding models (``pairwise=False``): ``i2t = score(img_l, gather(txt))``,
  ``t2i = score(gather(img), txt_l).T`` (``O(N·b)`` dot products each);
- similarity models (``pairwise=True``): each device scores ALL gathered images
  against ITS captions once, ``cols = score(gather(img), txt_l) [N, b]``;
  ``t2i = cols.T`` and ``i2t`` = this device's rows of ``all_gather(cols, axis=1)``,
  received by one ``all_to_all`` (row block d of every device's ``cols`` goes to device
  d; its transpose, the reverse all_to_all, carries the gradients back). The ``N×N``
  pairs are scored once over all devices, not twice.

It computes only those queries' per-query terms and their sums ``Σ w·l``; the
counts ``Σ w`` of queries that count are all-reduced from masks (no gradient).
So the loss costs O(N²/D) similarity entries per device (O(N³/D) for the
listwise ranks), not O(N²).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from jitr import losses
from jitr.losses.composite import Objective, PartialSums
from jitr.losses.query_rows import IMAGE_TO_TEXT, TEXT_TO_IMAGE, QueryRows
from jitr.models.retrieval_model import INPUTS, RetrievalModel
from jitr.training.state import TrainState

Batch = Mapping[str, jax.Array]
# (image-side rows, caption-side rows, positives [n_img, n_txt]) -> {name: [n_img, n_txt]},
# e.g. {"relevance": ...}; see jitr.training.graded.make_graded_fn.
GradedFn = Callable[[Batch, Batch, jax.Array], Mapping[str, jax.Array]]


def in_batch_targets(batch: Batch) -> tuple[jax.Array, jax.Array]:
  """``positives[i, j] = image_ids[i] == image_ids[j]`` and ``where = valid ⊗ valid``.

  A batch holds (image, caption) pairs: row i is pair i's image, column j pair
  j's caption, so every caption of the same image is a positive.
  """
  return query_targets(batch, batch)


def query_targets(queries: Batch, candidates: Batch) -> tuple[jax.Array, jax.Array]:
  """``positives [Q, C]`` and ``where [Q, C]`` of some pairs' queries against all candidates.

  The same for both directions: image i and caption j match when their pairs
  share an image id, whichever side is the query.
  """
  ids_q, ids_c = queries["image_ids"], candidates["image_ids"]
  valid_q = queries.get("valid", jnp.ones(ids_q.shape, bool))
  valid_c = candidates.get("valid", jnp.ones(ids_c.shape, bool))
  return ids_q[:, None] == ids_c[None, :], losses.pair_mask(valid_q, valid_c)


def exact_ndcg_sums(
  sim: jax.Array, relevance: jax.Array, positives: jax.Array, where: jax.Array
) -> tuple[jax.Array, jax.Array]:
  """``(Σ NDCG_q, #queries)`` of the real (exact-rank) NDCG over valid query rows."""
  relevance = jnp.where(positives, 1.0, relevance)
  values = jax.vmap(lambda a, b, c: losses.ndcg(a, b, where=c))(sim, relevance, where)
  rows = jnp.any(where, axis=-1)
  return jnp.sum(jnp.where(rows, values, 0.0)), jnp.sum(rows).astype(jnp.float32)


def exact_ndcg(
  sim: jax.Array, relevance: jax.Array, positives: jax.Array, where: jax.Array
) -> dict[str, jax.Array]:
  """The real (exact-rank) NDCG of both directions, averaged over valid queries."""
  out = {}
  for name, args in (
    ("ndcg_i2t", (sim, relevance, positives, where)),
    ("ndcg_t2i", (sim.T, relevance.T, positives.T, where.T)),
  ):
    total, count = exact_ndcg_sums(*args)
    out[name] = total / jnp.maximum(count, 1.0)
  return out


def _gather(x: jax.Array, axis_name: str | None) -> jax.Array:
  return x if axis_name is None else jax.lax.all_gather(x, axis_name, tiled=True)


def _psum(tree, axis_name: str | None):
  return tree if axis_name is None else jax.lax.psum(tree, axis_name)


def _merge_state(old: Mapping, new: Mapping) -> dict:
  """``old`` with the collections in ``new`` replaced (Flax returns whole collections)."""
  return {**old, **new}


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

  ``images, captions``: the representations of this device's ``b`` rows (device d holds
  global rows ``d·b .. d·b + b − 1``). Embedding models score ``(img_l, gather(txt))`` and
  ``(gather(img), txt_l)``; pairwise models score ``cols = (gather(img), txt_l) [N, b]``
  once and take ``t2i = cols.T`` and ``i2t`` = the device's rows of ``all_gather(cols, 1)``,
  exchanged by one ``all_to_all`` (each device receives only its ``[b, N]`` rows).
  """
  score = lambda img, txt: model.score(  # noqa: E731
    variables, img, txt, train=train, rngs=rngs, axis_name=axis_name
  )
  if not model.pairwise:
    i2t, state_a = score(images, _gather(captions, axis_name))
    t2i, state_b = score(_gather(images, axis_name), captions)
    return i2t, t2i.T, _merge_state(state_a, state_b)
  cols, state = score(_gather(images, axis_name), captions)
  if axis_name is None:
    return cols, cols.T, state
  # Row block d of every device's columns goes to device d: [b, N] in global caption
  # order. The same rows as ``all_gather(cols, axis=1)[rows]`` with O(N·b) traffic
  # instead of O(N²); the transpose (gradient) is the reverse all_to_all.
  i2t = jax.lax.all_to_all(cols, axis_name, split_axis=0, concat_axis=1, tiled=True)
  return i2t, cols.T, state


def split_loss(
  loss_fn: Objective,
  i2t_sim: jax.Array,
  t2i_sim: jax.Array,
  positives: jax.Array,
  where: jax.Array,
  graded: Mapping[str, tuple[jax.Array, jax.Array] | None],
  index: jax.Array,
  *,
  key: jax.Array | None,
  step: jax.Array | int | None,
  axis_name: str | None,
):
  """This device's share of the objective: ``(share, sums)``.

  ``i2t_sim, t2i_sim [b, N]``: this device's image and caption query rows (see
  :func:`query_rows`); ``positives, where [b, N]``: its queries against the global
  batch (the same for both directions); ``graded[term] = (rows, columns.T)``, each
  ``[b, N]``; ``index [b]``: the global indices of its queries. ``share`` has this
  device's numerators over the global counts (psum-ed, no gradient), so
  ``Σ_devices share`` is the objective; ``sums`` are the term sums with those
  global counts.
  """
  rows = {
    name: (
      QueryRows(i2t_sim, positives, where, None if g is None else g[0], index, IMAGE_TO_TEXT),
      QueryRows(t2i_sim, positives, where, None if g is None else g[1], index, TEXT_TO_IMAGE),
    )
    for name, g in graded.items()
  }
  sums = loss_fn.partial_sums(rows, key=key)
  counted = {  # global counts, local numerators: this device's share of L
    name: s._replace(
      image_count=_psum(s.image_count, axis_name), text_count=_psum(s.text_count, axis_name)
    )
    for name, s in sums.items()
  }
  share, _ = loss_fn.combine(counted, step=step)
  return share, counted


def aux_shares(
  aux_losses: Mapping[str, jax.Array], valid: jax.Array, axis_name: str | None
) -> dict[str, jax.Array]:
  """Each per-row auxiliary loss's device share ``Σ_{valid rows} l / psum(#valid)``: the
  shares sum over devices to the global mean over valid rows."""
  count = jnp.maximum(_psum(jnp.sum(valid).astype(jnp.float32), axis_name), 1.0)
  return {
    name: jnp.sum(jnp.where(valid, values.astype(jnp.float32), 0.0)) / count
    for name, values in aux_losses.items()
  }


class StepKeys(NamedTuple):
  """The random keys of one step: ``rng`` for the next state, ``loss`` for the objective's
  draws, ``forward`` / ``score`` for the dropout of :meth:`RetrievalModel.forward` /
  :meth:`RetrievalModel.score` (folded with the device index: each device drops its own)."""

  rng: jax.Array
  loss: jax.Array
  forward: jax.Array
  score: jax.Array


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


class DeviceOutputs(NamedTuple):
  """What one device's differentiated pass returns beside its share of the loss.

  Attributes:
    counted: each term's :class:`PartialSums` (local numerators, global counts).
    aux: each auxiliary loss's device share (:func:`aux_shares`).
    i2t_sim, t2i_sim: ``[b, N]`` this device's image and caption query rows.
    model_state: the model's mutated collections after the forward pass and scoring.
  """

  counted: dict[str, PartialSums]
  aux: dict[str, jax.Array]
  i2t_sim: jax.Array
  t2i_sim: jax.Array
  model_state: dict


def check_term_names(model: RetrievalModel, loss_fn: Objective) -> None:
  """Raises ``ValueError`` when an objective term shares a name with an auxiliary loss
  (both would be logged as ``loss/<name>``)."""
  clash = sorted(set(model.aux_weights) & set(loss_fn.terms))
  if clash:
    raise ValueError(
      f"make_train_step: objective terms {clash} have the names of the model's auxiliary "
      "losses (both would be logged as loss/<name>); rename the terms in config.loss"
    )


def step_keys(rng: jax.Array, axis_name: str | None) -> StepKeys:
  """``rng -> (rng', loss, dropout)`` by one split; the dropout key is folded with the
  device index, and ``score = fold_in(dropout, 1)``, ``forward = dropout``."""
  rng, loss_key, dropout_key = jax.random.split(rng, 3)
  if axis_name is not None:
    dropout_key = jax.random.fold_in(dropout_key, jax.lax.axis_index(axis_name))
  return StepKeys(rng, loss_key, dropout_key, jax.random.fold_in(dropout_key, 1))


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


def device_queries(
  batch: Batch,
  graded_fn: GradedFn | None,
  axis_name: str | None,
  model_inputs: Collection[str] = INPUTS,
) -> DeviceQueries:
  """This device's queries: the batch's non-model fields (ids, validity, stored relevance
  data; every key but the ``model_inputs``, the model's :attr:`RetrievalModel.inputs`)
  all-gathered over ``axis_name``, the device's global row indices, its targets
  (:func:`query_targets`) and its graded rows (:func:`graded_rows`)."""
  local = {k: v for k, v in batch.items() if k not in model_inputs}
  shared = {k: _gather(v, axis_name) for k, v in local.items()}
  rows_here = local["image_ids"].shape[0]
  start = 0 if axis_name is None else jax.lax.axis_index(axis_name) * rows_here
  index = start + jnp.arange(rows_here)
  positives, where = query_targets(local, shared)
  valid = local.get("valid", jnp.ones((rows_here,), bool))
  graded = {} if graded_fn is None else graded_rows(graded_fn, local, shared, index, positives)
  return DeviceQueries(index, positives, where, valid, graded)


def as_varying(params, axis_name: str | None):
  """``params`` marked as varying over ``axis_name``: differentiating each device's own
  share then gives per-device gradients (summed by :func:`reduce_across_devices`)."""
  return params if axis_name is None else jax.lax.pcast(params, axis_name, to="varying")


def forward_rows(
  model: RetrievalModel,
  params,
  model_state: Mapping,
  batch: Batch,
  keys: StepKeys,
  axis_name: str | None,
):
  """``(output, i2t [b, N], t2i [b, N], model_state')``: ``model.forward`` on this device's
  rows (train mode), then its query rows (:func:`query_rows`); ``model_state'`` holds the
  collections mutated by both."""
  out, forward_state = model.forward(
    {"params": params, **model_state},
    batch,
    train=True,
    rngs={"dropout": keys.forward},
    axis_name=axis_name,
  )
  forward_state = _merge_state(model_state, forward_state)
  i2t_sim, t2i_sim, score_state = query_rows(
    model,
    {"params": params, **forward_state},
    out.images,
    out.captions,
    train=True,
    rngs={"dropout": keys.score},
    axis_name=axis_name,
  )
  return out, i2t_sim, t2i_sim, _merge_state(forward_state, score_state)


def device_share(
  params,
  *,
  model: RetrievalModel,
  loss_fn: Objective,
  model_state: Mapping,
  batch: Batch,
  queries: DeviceQueries,
  term_graded: Mapping[str, tuple[jax.Array, jax.Array] | None],
  keys: StepKeys,
  step: jax.Array,
  axis_name: str | None,
) -> tuple[jax.Array, DeviceOutputs]:
  """``(share, outputs)``: the function of ``params`` each device differentiates.

  ``share = split_loss + Σ_a w_a · aux_share_a`` (:func:`split_loss`,
  :func:`aux_shares`, ``w_a = model.aux_weights[a]``): this device's numerators over the
  global counts, so the shares of all devices sum to the loss.
  """
  out, i2t_sim, t2i_sim, new_state = forward_rows(
    model, params, model_state, batch, keys, axis_name
  )
  share, counted = split_loss(
    loss_fn,
    i2t_sim,
    t2i_sim,
    queries.positives,
    queries.where,
    term_graded,
    queries.index,
    key=keys.loss,
    step=step,
    axis_name=axis_name,
  )
  aux = aux_shares(out.aux_losses, queries.valid, axis_name)
  share = share + sum(model.aux_weights[name] * value for name, value in aux.items())
  return share, DeviceOutputs(counted, aux, i2t_sim, t2i_sim, new_state)


def reduce_across_devices(grads, model_state: Mapping, axis_name: str | None):
  """``(psum(grads), pmean(model_state))`` over ``axis_name``: the sum of each device's
  gradient of its share is the gradient of the loss; the model state is the same on every
  device (the models synchronise their statistics), the mean keeps it so."""
  grads = _psum(grads, axis_name)
  if axis_name is not None:
    model_state = jax.lax.pmean(model_state, axis_name)
  return grads, model_state


def global_loss(
  loss_fn: Objective,
  aux_weights: Mapping[str, float],
  outputs: DeviceOutputs,
  *,
  step: jax.Array,
  axis_name: str | None,
) -> tuple[jax.Array, dict[str, jax.Array], dict[str, jax.Array]]:
  """``(total, {term: value}, {aux: mean})`` of the global batch from the devices' shares.

  The term sums are psum-ed (their counts are global already) and combined;
  ``total = Σ_t w_t L_t + Σ_a w_a · mean(aux_a)``.
  """
  total_sums = {
    name: PartialSums(
      _psum(s.image_to_text, axis_name),
      _psum(s.text_to_image, axis_name),
      s.image_count,
      s.text_count,
    )
    for name, s in outputs.counted.items()
  }
  total, parts = loss_fn.combine(total_sums, step=step)
  aux_means = _psum(outputs.aux, axis_name)
  total = total + sum(aux_weights[name] * value for name, value in aux_means.items())
  return total, parts, aux_means


def ndcg_metrics(
  outputs: DeviceOutputs, queries: DeviceQueries, axis_name: str | None
) -> dict[str, jax.Array]:
  """The exact ``ndcg_i2t`` / ``ndcg_t2i`` of the global batch (:func:`exact_ndcg_sums` of
  this device's queries, psum-ed) from the ``relevance`` graded rows; ``{}`` without them."""
  if "relevance" not in queries.graded:
    return {}
  rows, columns = queries.graded["relevance"]
  metrics = {}
  for name, sim, rel in (
    ("ndcg_i2t", outputs.i2t_sim, rows),
    ("ndcg_t2i", outputs.t2i_sim, columns),
  ):
    value, count = _psum(
      exact_ndcg_sums(jax.lax.stop_gradient(sim), rel, queries.positives, queries.where),
      axis_name,
    )
    metrics[name] = value / jnp.maximum(count, 1.0)
  return metrics


def step_metrics(
  total: jax.Array,
  parts: Mapping[str, jax.Array],
  aux_means: Mapping[str, jax.Array],
  grads,
  ndcg: Mapping[str, jax.Array],
) -> dict[str, jax.Array]:
  """``loss``, ``loss/<term>``, ``loss/<aux>``, ``grad_norm`` (global norm) and ``ndcg``."""
  return {
    "loss": total,
    **{f"loss/{k}": v for k, v in parts.items()},
    **{f"loss/{k}": v for k, v in aux_means.items()},
    "grad_norm": optax.tree.norm(grads),
    **ndcg,
  }


def apply_update(state: TrainState, grads, *, rng: jax.Array, model_state: Mapping) -> TrainState:
  """One optimizer update of ``state`` by ``grads`` (``state.apply_gradients``: the step
  count + 1) with the next ``rng`` and the reduced ``model_state``."""
  return state.apply_gradients(grads).replace(rng=rng, model_state=model_state)


def make_train_step(
  loss_fn: Objective,
  *,
  model: RetrievalModel,
  graded_fn: GradedFn | None = None,
  axis_name: str | None = "batch",
) -> Callable[[TrainState, Batch], tuple[TrainState, dict[str, jax.Array]]]:
  """Builds the per-device ``train_step(state, batch) -> (state, metrics)``.

  Each device runs ``model.forward`` on its rows (train mode, dropout keyed per
  device), all-gathers the representations it needs and the non-model fields of the
  batch (ids, validity, stored relevance data) over ``axis_name``, scores its query
  rows (:func:`!query_rows`) and computes the objective's per-query terms of **its
  own** queries against the global batch (see the module docstring):
  ``L = Σ_t w_t Σ_dir (Σ_d Σ_{q∈d} w_q·l_q) / (Σ_d Σ_{q∈d} w_q) + Σ_a w_a·mean(aux_a)``
  with ``w_a = model.aux_weights[a]`` and the mean over the valid rows of the global
  batch. The gradient of the parameters is the psum over devices of each device's
  gradient of its own share (its numerators over the global counts), which is
  exactly the single-device gradient. The model's mutated collections (running
  BatchNorm statistics, synchronised over ``axis_name`` by the model) are
  ``pmean``-ed and stored in ``state.model_state``. ``axis_name=None`` gives the
  single-device step.

  The step, top to bottom: :func:`!step_keys`, :func:`!device_queries`, the gradient of
  :func:`!device_share`, :func:`!reduce_across_devices`, :func:`!global_loss`,
  :func:`!ndcg_metrics`, :func:`!step_metrics` and :func:`!apply_update`.

  Metrics: ``loss`` (the total), ``loss/<term>`` of each objective term,
  ``loss/<aux>`` (unweighted mean) of each auxiliary loss, ``grad_norm`` and, with a
  ``relevance`` graded input, the exact ``ndcg_i2t`` / ``ndcg_t2i`` of the batch.
  """
  check_term_names(model, loss_fn)

  def train_step(state: TrainState, batch: Batch):
    keys = step_keys(state.rng, axis_name)
    queries = device_queries(batch, graded_fn, axis_name, model.inputs)
    share = functools.partial(
      device_share,
      model=model,
      loss_fn=loss_fn,
      model_state=state.model_state,
      batch=batch,
      queries=queries,
      term_graded=loss_fn.graded_inputs(queries.graded or None),
      keys=keys,
      step=state.step,
      axis_name=axis_name,
    )
    (_, outputs), grads = jax.value_and_grad(share, has_aux=True)(
      as_varying(state.params, axis_name)
    )
    grads, model_state = reduce_across_devices(grads, outputs.model_state, axis_name)
    total, parts, aux_means = global_loss(
      loss_fn, model.aux_weights, outputs, step=state.step, axis_name=axis_name
    )
    metrics = step_metrics(
      total, parts, aux_means, grads, ndcg_metrics(outputs, queries, axis_name)
    )
    return apply_update(state, grads, rng=keys.rng, model_state=model_state), metrics

  return train_step
