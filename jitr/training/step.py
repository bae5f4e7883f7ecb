"""The pure train step: embeddings -> query rows -> relevance -> objective -> optax.

Data parallelism splits the loss by **query rows**: with local embeddings
``img_l, txt_l [b, E]`` and the gathered ``img_all, txt_all [N, E]``, device d
scores its image queries ``similarity(img_l, txt_all) [b, N]`` (image->text)
and its caption queries ``similarity(img_all, txt_l).T [b, N]`` (text->image),
computes only those queries' per-query terms and their sums ``Σ w·l``; the
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
from jitr.training.state import TrainState

Batch = Mapping[str, jax.Array]
# (image-side rows, caption-side rows, positives [n_img, n_txt]) -> {name: [n_img, n_txt]},
# e.g. {"relevance": ...}; see jitr.training.graded.make_graded_fn.
GradedFn = Callable[[Batch, Batch, jax.Array], Mapping[str, jax.Array]]
# (image representations [Q, ...], caption representations [C, ...]) -> scores [Q, C]
Similarity = Callable[[jax.Array, jax.Array], jax.Array]

MODEL_INPUTS = ("images", "image_mask", "tokens", "lengths")


def dot_similarity(images: jax.Array, captions: jax.Array) -> jax.Array:
  """``s_ij = <img_i, txt_j>`` in float32: the dual encoders' score."""
  return images.astype(jnp.float32) @ captions.astype(jnp.float32).T


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


def split_loss(
  loss_fn: Objective,
  img: jax.Array,
  txt: jax.Array,
  positives: jax.Array,
  where: jax.Array,
  graded: Mapping[str, tuple[jax.Array, jax.Array] | None],
  index: jax.Array,
  *,
  key: jax.Array | None,
  step: jax.Array | int | None,
  axis_name: str | None,
  similarity: Similarity = dot_similarity,
):
  """This device's share of the objective: ``(share, (sums, i2t_sim, t2i_sim))``.

  ``img, txt``: this device's ``b`` rows; ``positives, where [b, N]``: its
  queries against the global batch (the same for both directions);
  ``graded[term] = (rows, columns.T)``, each ``[b, N]``; ``index [b]``: the
  global indices of its queries. ``share`` has this device's numerators over
  the global counts (psum-ed, no gradient), so ``Σ_devices share`` is the
  objective; ``sums`` are the term sums with those global counts.
  """
  i2t_sim = similarity(img, _gather(txt, axis_name))
  t2i_sim = similarity(_gather(img, axis_name), txt).T
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
  return share, (counted, i2t_sim, t2i_sim)


def make_train_step(
  loss_fn: Objective,
  *,
  graded_fn: GradedFn | None = None,
  axis_name: str | None = "batch",
  similarity: Similarity = dot_similarity,
) -> Callable[[TrainState, Batch], tuple[TrainState, dict[str, jax.Array]]]:
  """Builds the per-device ``train_step(state, batch) -> (state, metrics)``.

  Each device embeds its rows, all-gathers both sides' representations and
  the non-model fields of the batch (ids, validity, stored relevance data)
  over ``axis_name``, and computes the objective's per-query terms of **its
  own** queries against the global batch (see the module docstring):
  ``L = Σ_t w_t Σ_dir (Σ_d Σ_{q∈d} w_q·l_q) / (Σ_d Σ_{q∈d} w_q)``. The gradient
  of the parameters is the psum over devices of each device's gradient of its
  own share (its numerators over the global counts), which is exactly the
  single-device gradient. ``axis_name=None`` gives the single-device step.

  ``state.apply_fn(params, batch, rngs) -> (img, txt)``, the representations
  of the device's rows; ``similarity(img, txt) -> [Q, C]`` scores them
  (default: float32 dot product). A similarity model plugs in there: each
  device scores all gathered images against its own captions and its own
  images against all gathered captions.
  """

  def train_step(state: TrainState, batch: Batch):
    rng, loss_key, dropout_key = jax.random.split(state.rng, 3)
    local = {k: v for k, v in batch.items() if k not in MODEL_INPUTS}
    shared = {k: _gather(v, axis_name) for k, v in local.items()}
    rows_here = local["image_ids"].shape[0]
    start = 0 if axis_name is None else jax.lax.axis_index(axis_name) * rows_here
    index = start + jnp.arange(rows_here)
    positives, where = query_targets(local, shared)
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

    def compute(params):
      img, txt = state.apply_fn(params, batch, {"dropout": dropout_key})
      return split_loss(
        loss_fn,
        img,
        txt,
        positives,
        where,
        term_graded,
        index,
        key=loss_key,
        step=state.step,
        axis_name=axis_name,
        similarity=similarity,
      )

    (_, (counted, i2t_sim, t2i_sim)), grads = jax.value_and_grad(compute, has_aux=True)(params)
    grads = _psum(grads, axis_name)
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
    metrics = {
      "loss": total,
      **{f"loss/{k}": v for k, v in parts.items()},
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
    return state.apply_gradients(grads).replace(rng=rng), metrics

  return train_step
