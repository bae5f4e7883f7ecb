"""Region encoder: shapes, L2 norm, exact masked max, padding invariance."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr.models import RegionEncoder, masked_max, masked_mean


def _data():
  regions = jax.random.normal(jax.random.key(0), (3, 5, 8))
  mask = jnp.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], bool)
  return regions, mask


@pytest.mark.parametrize("pooling", ["max", "mean", "gpo"])
def test_shapes_norm_and_padding_invariance(pooling, make_params):
  regions, mask = _data()
  enc = RegionEncoder(embed_dim=6, pooling=pooling)
  params = make_params(enc, regions, mask)
  apply = jax.jit(enc.apply)
  out = apply(params, regions, mask)
  assert out.shape == (3, 6) and out.dtype == jnp.float32
  np.testing.assert_allclose(jnp.linalg.norm(out, axis=-1), 1.0, rtol=1e-5)
  changed = jnp.where(
    mask[..., None], regions, 50.0 * jax.random.normal(jax.random.key(9), regions.shape)
  )
  np.testing.assert_allclose(apply(params, changed, mask), out, atol=1e-6)
  # the same inputs with an all-True mask do see the (changed) padding
  assert not np.allclose(apply(params, changed, jnp.ones_like(mask))[0], out[0])


def test_max_pooling_exact_with_identity_projection():
  regions, mask = _data()
  enc = RegionEncoder(embed_dim=8, pooling="max", normalize=False)
  params = {"params": {"fc": {"kernel": jnp.eye(8), "bias": jnp.zeros(8)}}}
  out = jax.jit(enc.apply)(params, regions, mask)
  r, m = np.asarray(regions), np.asarray(mask)
  want = np.stack([r[i][m[i]].max(0) for i in range(3)])
  np.testing.assert_allclose(out, want, rtol=1e-6)


def test_masked_pool_helpers_hand_case():
  x = jnp.array([[[1.0, -5.0], [3.0, -7.0], [100.0, 100.0]]])
  mask = jnp.array([[True, True, False]])
  np.testing.assert_allclose(masked_max(x, mask), [[3.0, -5.0]])
  np.testing.assert_allclose(masked_mean(x, mask), [[2.0, -6.0]])
  none = jnp.zeros((1, 3), bool)
  np.testing.assert_allclose(masked_max(x, none), [[0.0, 0.0]])
  np.testing.assert_allclose(masked_mean(x, none), [[0.0, 0.0]])


def test_bad_inputs():
  enc = RegionEncoder(embed_dim=4)
  shapes = lambda m, *a: jax.eval_shape(m.init, jax.random.key(0), *a)  # noqa: E731
  with pytest.raises(ValueError, match=r"regions must be \[B, K, D\]"):
    shapes(enc, jnp.zeros((2, 8)))
  with pytest.raises(ValueError, match="mask must be"):
    shapes(enc, jnp.zeros((2, 3, 8)), jnp.ones((2, 4), bool))
  with pytest.raises(ValueError, match="pooling must be one of"):
    shapes(RegionEncoder(embed_dim=4, pooling="sum"), jnp.zeros((2, 3, 8)))
