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

from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import optax

from jitr import losses
from jitr.losses import _masks
from jitr.losses.composite import Objective, PartialSums
from jitr.models.retrieval_model import RetrievalModel
from jitr.training.state import TrainState

Batch = Mapping[str, jax.Array]
# (image-side rows, caption-side rows, positives [n_img, n_txt]) -> {name: [n_img, n_txt]},
# e.g. {"relevance": ...}; see jitr.training.graded.make_graded_fn.
GradedFn = Callable[[Batch, Batch, jax.Array], Mapping[str, jax.Array]]

MODEL_INPUTS = ("images", "image_mask", "tokens", "lengths")


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
      _masks.QueryRows(
        i2t_sim, positives, where, None if g is None else g[0], index, _masks.IMAGE_TO_TEXT
      ),
      _masks.QueryRows(
        t2i_sim, positives, where, None if g is None else g[1], index, _masks.TEXT_TO_IMAGE
      ),
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
  rows (:func:`query_rows`) and computes the objective's per-query terms of **its
  own** queries against the global batch (see the module docstring):
  ``L = Σ_t w_t Σ_dir (Σ_d Σ_{q∈d} w_q·l_q) / (Σ_d Σ_{q∈d} w_q) + Σ_a w_a·mean(aux_a)``
  with ``w_a = model.aux_weights[a]`` and the mean over the valid rows of the global
  batch. The gradient of the parameters is the psum over devices of each device's
  gradient of its own share (its numerators over the global counts), which is
  exactly the single-device gradient. The model's mutated collections (running
  BatchNorm statistics, synchronised over ``axis_name`` by the model) are
  ``pmean``-ed and stored in ``state.model_state``. ``axis_name=None`` gives the
  single-device step.

  Metrics: ``loss`` (the total), ``loss/<term>`` of each objective term,
  ``loss/<aux>`` (unweighted mean) of each auxiliary loss, ``grad_norm`` and, with a
  ``relevance`` graded input, the exact ``ndcg_i2t`` / ``ndcg_t2i`` of the batch.
  """

  clash = sorted(set(model.aux_weights) & set(loss_fn.terms))
  if clash:
    raise ValueError(
      f"make_train_step: objective terms {clash} have the names of the model's auxiliary "
      "losses (both would be logged as loss/<name>); rename the terms in config.loss"
    )

  def train_step(state: TrainState, batch: Batch):
    rng, loss_key, dropout_key = jax.random.split(state.rng, 3)
    local = {k: v for k, v in batch.items() if k not in MODEL_INPUTS}
    shared = {k: _gather(v, axis_name) for k, v in local.items()}
    rows_here = local["image_ids"].shape[0]
    start = 0 if axis_name is None else jax.lax.axis_index(axis_name) * rows_here
    index = start + jnp.arange(rows_here)
    positives, where = query_targets(local, shared)
    valid = local.get("valid", jnp.ones((rows_here,), bool))
    graded = {}
    if graded_fn is not None:  # only this device's query rows: O(N²/D), never [N, N]
      mine = {**local, "pair_index": index}
      every = {**shared, "pair_index": jnp.arange(shared["image_ids"].shape[0])}
      i2t = graded_fn(mine, every, positives)  # its images against all captions [b, N]
      t2i = graded_fn(every, mine, query_targets(shared, local)[0])  # all images, its captions
      graded = {name: (i2t[name], t2i[name].T) for name in i2t}
    term_graded = loss_fn.graded_inputs(graded or None)

    params = state.params
    if axis_name is not None:
      dropout_key = jax.random.fold_in(dropout_key, jax.lax.axis_index(axis_name))
      # Differentiate each device's own share: per-device gradients, summed below.
      params = jax.lax.pcast(params, axis_name, to="varying")
    forward_key, score_key = dropout_key, jax.random.fold_in(dropout_key, 1)

    def compute(params):
      out, model_state = model.forward(
        {"params": params, **state.model_state},
        batch,
        train=True,
        rngs={"dropout": forward_key},
        axis_name=axis_name,
      )
      model_state = _merge_state(state.model_state, model_state)
      i2t_sim, t2i_sim, score_state = query_rows(
        model,
        {"params": params, **model_state},
        out.images,
        out.captions,
        train=True,
        rngs={"dropout": score_key},
        axis_name=axis_name,
      )
      share, counted = split_loss(
        loss_fn,
        i2t_sim,
        t2i_sim,
        positives,
        where,
        term_graded,
        index,
        key=loss_key,
        step=state.step,
        axis_name=axis_name,
      )
      aux = aux_shares(out.aux_losses, valid, axis_name)
      share = share + sum(model.aux_weights[name] * value for name, value in aux.items())
      new_state = _merge_state(model_state, score_state)
      return share, (counted, aux, i2t_sim, t2i_sim, new_state)

    (_, (counted, aux, i2t_sim, t2i_sim, new_state)), grads = jax.value_and_grad(
      compute, has_aux=True
    )(params)
    grads = _psum(grads, axis_name)
    if axis_name is not None:  # identical on every device (the models sync their statistics)
      new_state = jax.lax.pmean(new_state, axis_name)
    total_sums = {
      name: PartialSums(
        _psum(s.image_to_text, axis_name),
        _psum(s.text_to_image, axis_name),
        s.image_count,
        s.text_count,
      )
      for name, s in counted.items()
    }
    total, parts = loss_fn.combine(total_sums, step=state.step)
    aux_means = _psum(aux, axis_name)
    total = total + sum(model.aux_weights[name] * value for name, value in aux_means.items())
    metrics = {
      "loss": total,
      **{f"loss/{k}": v for k, v in parts.items()},
      **{f"loss/{k}": v for k, v in aux_means.items()},
      "grad_norm": optax.tree.norm(grads),
    }
    if "relevance" in graded:  # the real NDCG of this device's queries, averaged globally
      for name, sim, rel in (
        ("ndcg_i2t", i2t_sim, graded["relevance"][0]),
        ("ndcg_t2i", t2i_sim, graded["relevance"][1]),
      ):
        value, count = _psum(
          exact_ndcg_sums(jax.lax.stop_gradient(sim), rel, positives, where), axis_name
        )
        metrics[name] = value / jnp.maximum(count, 1.0)
    state = state.apply_gradients(grads).replace(rng=rng, model_state=new_state)
    return state, metrics

  return train_step
