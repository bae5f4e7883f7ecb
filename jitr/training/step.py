"""The pure train step: model -> query rows -> objective (+ aux) -> gradient -> optax.

:func:`make_train_step` reads top to bottom: the step's random keys, this device's
queries, then a ``loss_fn(params)`` closure (the model's forward pass on the device's
rows, its query rows of the global similarity matrix, the objective's share and the
auxiliary losses' shares), ``jax.value_and_grad`` of it, the reduction across devices and
the optimizer update. The helpers below it compute one device's share of the objective
(:func:`split_loss`, :func:`aux_shares`) and the step's metrics (:func:`global_loss`,
:func:`ndcg_metrics`). What crosses devices is in :mod:`!jitr.training.row_exchange`.

Data parallelism splits the loss by **query rows**: device d holds ``b = N/D`` of the
global batch's ``N`` pairs and computes only its own queries' per-query terms, against
the global batch, and their sums ``Σ w·l``; the counts ``Σ w`` of queries that count are
all-reduced from masks (no gradient). So each device's share has its numerators over the
global counts, the shares add up to the loss, and the psum of each device's gradient of
its share is the single-device gradient. The loss costs O(N²/D) similarity entries per
device (O(N³/D) for the listwise ranks), not O(N²).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from jitr import losses
from jitr.data.token_chunks import joined_token_chunks
from jitr.losses import checks
from jitr.losses.composite import Objective, PartialSums
from jitr.losses.query_rows import IMAGE_TO_TEXT, TEXT_TO_IMAGE, QueryRows
from jitr.models.retrieval_model import ModelOutput, RetrievalModel
from jitr.training import grad_cache, row_exchange
from jitr.training import query_chunks as query_chunks_lib
from jitr.training.row_exchange import Batch, DeviceQueries, GradedFn
from jitr.training.state import TrainState


class DeviceOutputs(NamedTuple):
  """What one device's ``loss_fn`` returns beside its share of the loss.

  Attributes:
    counted: each term's :class:`PartialSums` (local numerators, global counts).
    aux: each auxiliary loss's device share (:func:`aux_shares`).
    ndcg: ``{"ndcg_i2t": (Σ NDCG, #queries), "ndcg_t2i": …}`` of this device's queries
      (:func:`ndcg_sums`; ``{}`` without a ``relevance`` graded input).
    model_state: the model's mutated collections after the forward pass and scoring.
  """

  counted: dict[str, PartialSums]
  aux: dict[str, jax.Array]
  ndcg: dict[str, tuple[jax.Array, jax.Array]]
  model_state: dict


def make_train_step(
  loss_fn: Objective,
  *,
  model: RetrievalModel,
  graded_fn: GradedFn | None = None,
  axis_name: str | None = "batch",
  grad_chunks: int = 1,
  query_chunks: int = 1,
) -> Callable[[TrainState, Batch], tuple[TrainState, dict[str, jax.Array]]]:
  """Builds the per-device ``train_step(state, batch) -> (state, metrics)``.

  Each device runs ``model.forward`` on its rows (train mode, dropout keyed per
  device), all-gathers the representations it needs and the non-model fields of the
  batch (ids, validity, stored relevance data) over ``axis_name``, scores its query
  rows (:func:`!jitr.training.row_exchange.query_rows`) and computes the objective's
  per-query terms of **its own** queries against the global batch (see the module
  docstring):
  ``L = Σ_t w_t Σ_dir (Σ_d Σ_{q∈d} w_q·l_q) / (Σ_d Σ_{q∈d} w_q) + Σ_a w_a·mean(aux_a)``
  with ``w_a = model.aux_weights[a]`` and the mean over the valid rows of the global
  batch. The gradient of the parameters is the psum over devices of each device's
  gradient of its own share (its numerators over the global counts), which is
  exactly the single-device gradient. The model's mutated collections (running
  BatchNorm statistics, synchronised over ``axis_name`` by the model) are
  ``pmean``-ed and stored in ``state.model_state``. ``axis_name=None`` gives the
  single-device step.

  ``grad_chunks = k > 1`` runs each device's forward pass ``k`` chunks of its rows at a
  time (:mod:`!jitr.training.grad_cache`): embeddings without activations, the loss's
  gradient at them, then each chunk's forward again and its backward; the same update
  with one chunk's activations in memory (a network without batch statistics or
  auxiliary losses; dropout drawn per chunk).

  ``query_chunks = k > 1`` scores each device's query rows and takes their terms ``k``
  chunks at a time, each chunk's scoring redone in the backward pass
  (:mod:`!jitr.training.query_chunks`): the same update holding ``[b/k, N]`` rows of the
  similarity, targets and graded inputs instead of ``[b, N]`` (embedding models).

  Metrics: ``loss`` (the total), ``loss/<term>`` of each objective term,
  ``loss/<aux>`` (unweighted mean) of each auxiliary loss, ``grad_norm`` and, with a
  ``relevance`` graded input, the exact ``ndcg_i2t`` / ``ndcg_t2i`` of the batch.
  """
  check_term_names(model, loss_fn)
  checks.check_block_size("grad_chunks", grad_chunks)
  checks.check_block_size("query_chunks", query_chunks)
  if query_chunks > 1 and model.pairwise:
    raise ValueError(
      "config.query_chunks: the network scores each (image, caption) pair itself, which "
      "exchanges whole blocks of the similarity; expected query_chunks 1"
    )
  objective = loss_fn  # the name loss_fn goes to the closure differentiated below

  def train_step(state: TrainState, batch: Batch):
    batch = joined_token_chunks(batch)  # config.token_chunks > 1: tokens as a tuple of chunks
    # The step's keys (dropout drawn per device) and this device's queries.
    rng, loss_key, dropout_key = jax.random.split(state.rng, 3)
    dropout_key = row_exchange.device_key(dropout_key, axis_name)
    fields = {k: v for k, v in batch.items() if k not in model.inputs}  # the queries' data
    valid = fields.get("valid", jnp.ones(fields["image_ids"].shape, bool))
    queries = None  # by chunks (chunked_scored), else whole
    if query_chunks == 1:
      queries = row_exchange.device_queries(fields, graded_fn, axis_name)

    def forward(params, rows, key):
      """The model's forward pass on ``rows`` (train mode, dropout from ``key``)."""
      return model.forward(
        {"params": params, **state.model_state},
        rows,
        train=True,
        rngs={"dropout": key},
        axis_name=axis_name,
      )

    def loss_fn(params):
      """``(share, DeviceOutputs)``: this device's share of the loss; the shares of all
      devices sum to it."""
      out, new_state = forward(params, batch, dropout_key)
      return scored(params, out, {**state.model_state, **new_state})

    def scored(params, out, new_state):
      """``loss_fn`` from the forward pass's output ``out``: this device's ``[b, N]`` query
      rows, the objective's share and the auxiliary losses' shares."""
      if query_chunks > 1:
        return chunked_scored(params, out, new_state)
      i2t_sim, t2i_sim, score_state = row_exchange.query_rows(
        model,
        {"params": params, **new_state},
        out.images,
        out.captions,
        train=True,
        rngs={"dropout": jax.random.fold_in(dropout_key, 1)},
        axis_name=axis_name,
      )
      new_state = {**new_state, **score_state}
      # The objective's share: this device's numerators over the global counts, its
      # learned hyper-parameters (CLIP's temperature) the model's, with their gradient.
      learned = model.learned_hyper(params) if model.learned_hyper is not None else None
      share, counted = split_loss(
        objective,
        i2t_sim,
        t2i_sim,
        queries,
        key=loss_key,
        step=state.step,
        axis_name=axis_name,
        learned=learned,
      )
      ndcg = ndcg_sums(i2t_sim, t2i_sim, queries)
      return with_aux(share, counted, ndcg, out, new_state)

    def chunked_scored(params, out, new_state):
      """:func:`scored` with the query rows taken ``query_chunks`` at a time."""
      variables = {"params": params, **new_state}
      learned = model.learned_hyper(params) if model.learned_hyper is not None else None
      score_rngs = {"dropout": jax.random.fold_in(dropout_key, 1)}

      def score(images, captions):
        sim, _ = model.score(
          variables, images, captions, train=True, rngs=score_rngs, axis_name=axis_name
        )
        return sim

      def sums(i2t, t2i, chunk):
        terms = device_sums(objective, i2t, t2i, chunk, key=loss_key, learned=learned)
        return terms, ndcg_sums(i2t, t2i, chunk)

      terms, ndcg = query_chunks_lib.chunked_sums(
        sums,
        score,
        out.images,
        out.captions,
        fields,
        graded_fn,
        chunks=query_chunks,
        axis_name=axis_name,
      )
      share, counted = share_of(objective, terms, step=state.step, axis_name=axis_name)
      return with_aux(share, counted, ndcg, out, new_state)

    def with_aux(share, counted, ndcg, out, new_state):
      """The auxiliary losses' shares added: ``Σ_a w_a · (Σ_{valid rows} l_a / #valid)``."""
      aux = aux_shares(out.aux_losses, valid, axis_name)
      share = share + sum(model.aux_weights[name] * value for name, value in aux.items())
      return share, DeviceOutputs(counted, aux, ndcg, new_state)

    # The gradient of this device's share, then the sums over devices.
    params = row_exchange.as_varying(state.params, axis_name)
    if grad_chunks == 1:
      (_, outputs), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
    else:
      if state.model_state:
        raise ValueError(
          f"config.grad_chunks: the network keeps batch statistics {sorted(state.model_state)}, "
          "which a chunk's rows would change; expected grad_chunks 1"
        )
      (_, outputs), grads = grad_cache.value_and_grad(
        lambda p, rows, key: forward(p, rows, key)[0],
        lambda p, images, captions: scored(p, ModelOutput(images, captions, {}), {}),
        params,
        {k: batch[k] for k in model.inputs if k in batch},
        dropout_key,
        grad_chunks,
      )
    grads, model_state = row_exchange.reduce_across_devices(grads, outputs.model_state, axis_name)
    # The metrics of the global batch, and the update.
    total, parts, aux_means = global_loss(
      objective, model.aux_weights, outputs, step=state.step, axis_name=axis_name
    )
    metrics = {
      "loss": total,
      **{f"loss/{k}": v for k, v in parts.items()},
      **{f"loss/{k}": v for k, v in aux_means.items()},
      "grad_norm": optax.tree.norm(grads),
      **ndcg_metrics(outputs, axis_name),
      **learned_metrics(model, state.params),
    }
    return state.apply_gradients(grads).replace(rng=rng, model_state=model_state), metrics

  return train_step


def learned_metrics(model: RetrievalModel, params) -> dict[str, jax.Array]:
  """The model's learned hyper-parameters before the update, as ``learned/<name>``
  (``{}`` for a model without them)."""
  if model.learned_hyper is None:
    return {}
  return {f"learned/{k}": v for k, v in model.learned_hyper(params).items()}


def check_term_names(model: RetrievalModel, objective: Objective) -> None:
  """Raises ``ValueError`` when an objective term shares a name with an auxiliary loss
  (both would be logged as ``loss/<name>``), or takes a learned hyper-parameter the model
  does not learn."""
  for name in objective.learned:
    if name not in model.learned:
      raise ValueError(
        f"config.loss: a term takes {name}='learned', which this network does not learn "
        f"(it learns {list(model.learned) or 'none'}); give a number"
      )
  clash = sorted(set(model.aux_weights) & set(objective.terms))
  if clash:
    raise ValueError(
      f"make_train_step: objective terms {clash} have the names of the model's auxiliary "
      "losses (both would be logged as loss/<name>); rename the terms in config.loss"
    )


def split_loss(
  objective: Objective,
  i2t_sim: jax.Array,
  t2i_sim: jax.Array,
  queries: DeviceQueries,
  *,
  key: jax.Array | None,
  step: jax.Array | int | None,
  axis_name: str | None,
  learned: Mapping[str, jax.Array] | None = None,
) -> tuple[jax.Array, dict[str, PartialSums]]:
  """This device's share of the objective: ``(share, sums)``.

  ``i2t_sim, t2i_sim [b, N]``: this device's image and caption query rows (see
  :func:`!jitr.training.row_exchange.query_rows`); ``queries``: its queries' indices,
  targets and graded rows (:func:`!jitr.training.row_exchange.device_queries`), each
  term reading its graded input (``objective.graded_inputs``). ``share`` has this
  device's numerators over the global counts (psum-ed, no gradient), so
  ``Σ_devices share`` is the objective; ``sums`` are the term sums with those global
  counts.
  """
  sums = device_sums(objective, i2t_sim, t2i_sim, queries, key=key, learned=learned)
  return share_of(objective, sums, step=step, axis_name=axis_name)


def device_sums(
  objective: Objective,
  i2t_sim: jax.Array,
  t2i_sim: jax.Array,
  queries: DeviceQueries,
  *,
  key: jax.Array | None,
  learned: Mapping[str, jax.Array] | None = None,
) -> dict[str, PartialSums]:
  """Each term's :class:`PartialSums` of some query rows (local numerators and counts)."""
  graded = objective.graded_inputs(queries.graded or None)
  rows = {
    name: (
      QueryRows(
        i2t_sim,
        queries.positives,
        queries.where,
        None if g is None else g[0],
        queries.index,
        IMAGE_TO_TEXT,
      ),
      QueryRows(
        t2i_sim,
        queries.positives,
        queries.where,
        None if g is None else g[1],
        queries.index,
        TEXT_TO_IMAGE,
      ),
    )
    for name, g in graded.items()
  }
  return objective.partial_sums(rows, key=key, learned=learned)


def share_of(
  objective: Objective,
  sums: Mapping[str, PartialSums],
  *,
  step: jax.Array | int | None,
  axis_name: str | None,
) -> tuple[jax.Array, dict[str, PartialSums]]:
  """``(share, counted)``: this device's term sums with their counts psum-ed (global
  counts, local numerators), combined into its share of the objective."""
  counted = {
    name: s._replace(
      image_count=row_exchange.psum(s.image_count, axis_name),
      text_count=row_exchange.psum(s.text_count, axis_name),
    )
    for name, s in sums.items()
  }
  share, _ = objective.combine(counted, step=step)
  return share, counted


def aux_shares(
  aux_losses: Mapping[str, jax.Array], valid: jax.Array, axis_name: str | None
) -> dict[str, jax.Array]:
  """Each per-row auxiliary loss's device share ``Σ_{valid rows} l / psum(#valid)``: the
  shares sum over devices to the global mean over valid rows."""
  count = jnp.maximum(row_exchange.psum(jnp.sum(valid).astype(jnp.float32), axis_name), 1.0)
  return {
    name: jnp.sum(jnp.where(valid, values.astype(jnp.float32), 0.0)) / count
    for name, values in aux_losses.items()
  }


def global_loss(
  objective: Objective,
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
      row_exchange.psum(s.image_to_text, axis_name),
      row_exchange.psum(s.text_to_image, axis_name),
      s.image_count,
      s.text_count,
    )
    for name, s in outputs.counted.items()
  }
  total, parts = objective.combine(total_sums, step=step)
  aux_means = row_exchange.psum(outputs.aux, axis_name)
  total = total + sum(aux_weights[name] * value for name, value in aux_means.items())
  return total, parts, aux_means


def ndcg_sums(
  i2t_sim: jax.Array, t2i_sim: jax.Array, queries: DeviceQueries
) -> dict[str, tuple[jax.Array, jax.Array]]:
  """``{"ndcg_i2t": (Σ NDCG, #queries), "ndcg_t2i": …}``: :func:`exact_ndcg_sums` of these
  query rows (no gradient) against the ``relevance`` graded rows; ``{}`` without them."""
  if "relevance" not in queries.graded:
    return {}
  rows, columns = queries.graded["relevance"]
  return {
    name: exact_ndcg_sums(jax.lax.stop_gradient(sim), rel, queries.positives, queries.where)
    for name, sim, rel in (("ndcg_i2t", i2t_sim, rows), ("ndcg_t2i", t2i_sim, columns))
  }


def ndcg_metrics(outputs: DeviceOutputs, axis_name: str | None) -> dict[str, jax.Array]:
  """The exact ``ndcg_i2t`` / ``ndcg_t2i`` of the global batch: every device's
  :func:`ndcg_sums`, psum-ed."""
  metrics = {}
  for name, sums in outputs.ndcg.items():
    value, count = row_exchange.psum(sums, axis_name)
    metrics[name] = value / jnp.maximum(count, 1.0)
  return metrics


def in_batch_targets(batch: Batch) -> tuple[jax.Array, jax.Array]:
  """``positives[i, j] = image_ids[i] == image_ids[j]`` and ``where = valid ⊗ valid``.

  A batch holds (image, caption) pairs: row i is pair i's image, column j pair
  j's caption, so every caption of the same image is a positive.
  """
  return row_exchange.query_targets(batch, batch)


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
