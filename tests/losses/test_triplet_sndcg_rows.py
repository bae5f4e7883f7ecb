"""The per-process shares of ``triplet_sndcg_rows`` add up to ``triplet_sndcg``: values,
logged metrics and gradients, with a padded (ragged) global batch."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr.losses.triplet_sndcg import triplet_sndcg, triplet_sndcg_rows

HYPER = dict(margin=0.2, temperature=0.05, sndcg_weight=0.5)


def _inputs(m: int, n: int):
  keys = jax.random.split(jax.random.key(0), 4)
  normalize = lambda x: x / jnp.linalg.norm(x, axis=-1, keepdims=True)
  v = normalize(jax.random.normal(keys[0], (m, 6)))
  t = normalize(jax.random.normal(keys[1], (m, 6)))
  refs = jax.random.normal(keys[2], (m, 5, 4))
  caps = jax.random.normal(keys[3], (m, 4))
  return v, t, refs, caps, jnp.arange(m) < n


def _shares(v, t, refs, caps, valid, world: int, orientation: str):
  """``Σ_r share_r`` and the summed logged values over ``world`` processes."""
  m = v.shape[0]
  per = m // world
  total, sums = 0.0, {}
  for r in range(world):
    own = slice(r * per, (r + 1) * per)
    index = jnp.where(valid[own], jnp.arange(m)[own], -1)
    share, part = triplet_sndcg_rows(
      v[own] @ t.T, t[own] @ v.T, refs, caps, index, valid, jnp.sum(valid),
      orientation=orientation, **HYPER,
    )  # fmt: skip
    total = total + share
    sums = {k: sums.get(k, 0.0) + x for k, x in part.items()}
  return total, sums


@pytest.mark.parametrize(
  ("orientation", "m", "n", "world"),
  [("corrected", 8, 8, 2), ("official", 8, 6, 2), ("corrected", 9, 7, 3)],
)
def test_shares_add_up_to_the_global_loss(orientation, m, n, world):
  v, t, refs, caps, valid = _inputs(m, n)
  where = valid[:, None] & valid[None, :]

  def whole(v, t):
    return triplet_sndcg(v @ t.T, refs, caps, where=where, orientation=orientation, **HYPER)

  def split(v, t):
    return _shares(v, t, refs, caps, valid, world, orientation)

  # One compiled program per side (op-by-op dispatch would compile every primitive).
  (loss, metrics), grads = jax.jit(jax.value_and_grad(whole, argnums=(0, 1), has_aux=True))(v, t)
  (total, sums), split_grads = jax.jit(jax.value_and_grad(split, argnums=(0, 1), has_aux=True))(
    v, t
  )
  np.testing.assert_allclose(total, loss, rtol=1e-5, atol=1e-6)
  for name in ("pairwise", "listwise"):
    np.testing.assert_allclose(sums[name], metrics[name], rtol=1e-5, atol=1e-6)
  for name, count in [("ndcg_t", "count_t"), ("ndcg_v", "count_v")]:
    assert float(sums[count]) == n
    np.testing.assert_allclose(sums[name] / sums[count], metrics[name], rtol=1e-5)
  for name in ("real_ndcg_t", "real_ndcg_v"):
    count = sums[name.replace("ndcg", "count")]
    np.testing.assert_allclose(sums[name] / count, metrics[name], rtol=1e-5)
  for got, expected in zip(split_grads, grads):
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)
