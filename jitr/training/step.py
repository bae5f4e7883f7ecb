"""The pure train step: embeddings -> global similarity -> relevance -> objective -> optax."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from jitr import losses
from jitr.training.state import TrainState

Batch = Mapping[str, jax.Array]
# (gathered batch, positives) -> {name: [B, B] graded matrix}, e.g. {"relevance": ...}
GradedFn = Callable[[Batch, jax.Array], Mapping[str, jax.Array]]

MODEL_INPUTS = ("images", "image_mask", "tokens", "lengths")


def in_batch_targets(batch: Batch) -> tuple[jax.Array, jax.Array]:
  """``positives[i, j] = image_ids[i] == image_ids[j]`` and ``where = valid ⊗ valid``.

  A batch holds (image, caption) pairs: row i is pair i's image, column j pair
  j's caption, so every caption of the same image is a positive.
  """
  ids = batch["image_ids"]
  valid = batch.get("valid", jnp.ones(ids.shape, bool))
  return ids[:, None] == ids[None, :], losses.pair_mask(valid, valid)


def exact_ndcg(
  sim: jax.Array, relevance: jax.Array, positives: jax.Array, where: jax.Array
) -> dict[str, jax.Array]:
  """The real (exact-rank) NDCG of both directions, averaged over valid queries."""
  relevance = jnp.where(positives, 1.0, relevance)

  def direction(s, r, w):
    values = jax.vmap(lambda a, b, c: losses.ndcg(a, b, where=c))(s, r, w)
    rows = jnp.any(w, axis=-1)
    return jnp.sum(jnp.where(rows, values, 0.0)) / jnp.maximum(jnp.sum(rows), 1)

  return {
    "ndcg_i2t": direction(sim, relevance, where),
    "ndcg_t2i": direction(sim.T, relevance.T, where.T),
  }


def _gather(x: jax.Array, axis_name: str | None) -> jax.Array:
  return x if axis_name is None else jax.lax.all_gather(x, axis_name, tiled=True)


def make_train_step(
  loss_fn: losses.composite.Objective,
  *,
  graded_fn: GradedFn | None = None,
  axis_name: str | None = "batch",
) -> Callable[[TrainState, Batch], tuple[TrainState, dict[str, jax.Array]]]:
  """Builds the per-device ``train_step(state, batch) -> (state, metrics)``.

  Each device embeds its shard; image and caption embeddings and the
  non-model fields of the batch (ids, validity, stored relevance data) are
  all-gathered over ``axis_name``, so the loss ranks over the **global** batch
  ``sim = img_all @ txt_all.T``. Every device then holds the same loss; the
  all-gather's transpose sums each device's share of the gradient, and the
  ``pmean`` of those is exactly the single-device gradient. ``axis_name=None``
  gives the plain single-device step.

  ``state.apply_fn(params, batch, rngs) -> (img [b, E], txt [b, E])``.
  """

  def train_step(state: TrainState, batch: Batch):
    rng, loss_key, dropout_key = jax.random.split(state.rng, 3)
    if axis_name is not None:
      dropout_key = jax.random.fold_in(dropout_key, jax.lax.axis_index(axis_name))
    shared = {k: _gather(v, axis_name) for k, v in batch.items() if k not in MODEL_INPUTS}
    positives, where = in_batch_targets(shared)
    graded = dict(graded_fn(shared, positives)) if graded_fn is not None else None

    def compute(params):
      img, txt = state.apply_fn(params, batch, {"dropout": dropout_key})
      sim = (
        _gather(img, axis_name).astype(jnp.float32) @ _gather(txt, axis_name).astype(jnp.float32).T
      )
      total, parts = loss_fn(
        sim, positives=positives, where=where, graded=graded, key=loss_key, step=state.step
      )
      return total, (parts, sim)

    (total, (parts, sim)), grads = jax.value_and_grad(compute, has_aux=True)(state.params)
    if axis_name is not None:
      grads = jax.lax.pmean(grads, axis_name)
    metrics = {
      "loss": total,
      **{f"loss/{k}": v for k, v in parts.items()},
      "grad_norm": _global_norm(grads),
    }
    if graded is not None and "relevance" in graded:
      metrics.update(exact_ndcg(jax.lax.stop_gradient(sim), graded["relevance"], positives, where))
    if axis_name is not None:  # identical on every device already; pmean marks them replicated
      metrics = jax.lax.pmean(metrics, axis_name)
    return state.apply_gradients(grads).replace(rng=rng), metrics

  return train_step


def _global_norm(tree: Any) -> jax.Array:
  return jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in jax.tree.leaves(tree)))
