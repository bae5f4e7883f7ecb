"""GPO: hand-computed pooling, positional encoding, masking, special cases."""

import math

import jax
import jax.numpy as jnp
import numpy as np

from jitr.models import gpo


def test_gpo_pool_hand_computed():
  feats = jnp.array([[[1.0, 5.0], [3.0, 2.0], [2.0, 4.0], [99.0, 99.0]]])
  mask = jnp.array([[True, True, True, False]])
  weights = jnp.array([[0.5, 0.3, 0.2, 0.0]])
  # sorted per dim over the valid three: [3, 2, 1] and [5, 4, 2]
  out = gpo.gpo_pool(feats, mask, weights)
  np.testing.assert_allclose(
    out, [[3 * 0.5 + 2 * 0.3 + 1 * 0.2, 5 * 0.5 + 4 * 0.3 + 2 * 0.2]], rtol=1e-6
  )
  sorted_x, sorted_mask = gpo.sort_valid_desc(feats, mask)
  np.testing.assert_array_equal(sorted_x[0], [[3, 5], [2, 4], [1, 2], [0, 0]])
  np.testing.assert_array_equal(sorted_mask, [[True, True, True, False]])


def test_non_prefix_mask_sorts_only_valid_entries():
  feats = jnp.array([[[7.0], [1.0], [-2.0]]])
  mask = jnp.array([[False, True, True]])
  sorted_x, sorted_mask = gpo.sort_valid_desc(feats, mask)
  np.testing.assert_array_equal(sorted_x[0, :, 0], [1.0, -2.0, 0.0])
  np.testing.assert_array_equal(sorted_mask[0], [True, True, False])


def test_positional_encoding_values():
  pe = gpo.positional_encoding(3, 4)
  np.testing.assert_allclose(pe[0], [0, 1, 0, 1], atol=1e-7)
  np.testing.assert_allclose(
    pe[1], [math.sin(1), math.cos(1), math.sin(1e-2), math.cos(1e-2)], rtol=1e-6
  )
  np.testing.assert_allclose(pe[2, 2], math.sin(2 * 1e-2), rtol=1e-6)


FEATS = jax.random.normal(jax.random.key(1), (2, 6, 3))
GPO_APPLY = jax.jit(gpo.GPO().apply)  # one compilation for both tests


def test_zero_scores_give_mean_pooling_and_masked_weights(make_params):
  feats = FEATS
  mask = jnp.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]], bool)
  params = make_params(gpo.GPO(), feats, mask)
  params["params"]["linear"]["kernel"] = jnp.zeros_like(params["params"]["linear"]["kernel"])
  pooled, w = GPO_APPLY(params, feats, mask)
  np.testing.assert_allclose(w[0], [1 / 3] * 3 + [0, 0, 0], atol=1e-6)
  np.testing.assert_allclose(w[1], [1 / 6] * 6, atol=1e-6)
  np.testing.assert_allclose(pooled[0], feats[0, :3].mean(0), atol=1e-5)
  np.testing.assert_allclose(pooled[1], feats[1].mean(0), atol=1e-5)


def test_learned_weights_sum_to_one_and_padding_is_ignored(make_params):
  feats = FEATS
  mask = jnp.array([[1, 1, 0, 1, 0, 0], [1, 1, 1, 1, 1, 1]], bool)
  params = make_params(gpo.GPO(), feats, mask)
  pooled, w = GPO_APPLY(params, feats, mask)
  np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)
  np.testing.assert_allclose(w[0, 3:], 0.0, atol=1e-6)
  feats2 = jnp.where(mask[..., None], feats, 1e3)
  pooled2, w2 = GPO_APPLY(params, feats2, mask)
  np.testing.assert_allclose(pooled, pooled2, atol=1e-6)
  # weights depend only on the number of valid entries
  np.testing.assert_allclose(w2, w, atol=1e-6)
  # pooled = Σ θ_k · sorted_k, recomputed by hand from θ
  srt = -np.sort(-np.asarray(feats[0])[np.asarray(mask[0])], axis=0)
  np.testing.assert_allclose(pooled[0], (np.asarray(w[0, :3])[:, None] * srt).sum(0), atol=1e-5)
