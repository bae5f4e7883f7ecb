"""The one JAX L2 normalisation (two documented conventions) against numpy references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses
from jitr.losses.normalize import l2_normalize, l2_normalize_additive
from jitr.models.vse import cnn, region_encoder, text_gru
from jitr.models.vsrn import model as vsrn


def _np_clamped(x, eps):
  norm = np.sqrt(np.sum(np.asarray(x, np.float64) ** 2, axis=-1, keepdims=True))
  return x / np.maximum(norm, eps)


def _np_additive(x, eps):
  norm = np.sqrt(np.sum(np.asarray(x, np.float64) ** 2, axis=-1, keepdims=True))
  return x / (norm + eps)


X = np.array(
  [[3.0, 4.0, 0.0], [1e-9, 0.0, 0.0], [0.0, 0.0, 0.0], [-2.0, 1e-3, 7.0], [3e-8, 0.0, 4e-8]],
  np.float32,
)


@pytest.mark.parametrize("eps", [1e-8, 1e-12])
def test_values_match_numpy_references(eps):
  np.testing.assert_allclose(l2_normalize(X, eps=eps), _np_clamped(X, eps), rtol=1e-6, atol=1e-12)
  np.testing.assert_allclose(
    l2_normalize_additive(X, eps=eps), _np_additive(X, eps), rtol=1e-6, atol=1e-12
  )


def test_the_two_conventions_agree_for_ordinary_vectors_and_differ_for_tiny_ones():
  big = np.random.default_rng(0).normal(size=(16, 32)).astype(np.float32)
  np.testing.assert_allclose(l2_normalize(big), l2_normalize_additive(big), rtol=1e-6)
  np.testing.assert_allclose(np.linalg.norm(l2_normalize(big), axis=-1), 1.0, rtol=1e-6)
  tiny = X[4]  # norm 5e-8: clamped gives a unit vector, additive 5/6 of one
  np.testing.assert_allclose(np.linalg.norm(l2_normalize(tiny)), 1.0, rtol=1e-6)
  np.testing.assert_allclose(np.linalg.norm(l2_normalize_additive(tiny)), 5 / 6, rtol=1e-5)


def test_axis_and_float32_output():
  x = jnp.asarray(X.T, jnp.bfloat16)
  y = l2_normalize(x, axis=0)
  assert y.dtype == jnp.float32 and l2_normalize_additive(x, axis=0).dtype == jnp.float32
  np.testing.assert_allclose(y, _np_clamped(np.asarray(x, np.float32).T, 1e-8).T, rtol=1e-6)


@pytest.mark.parametrize("fn", [l2_normalize, l2_normalize_additive])
def test_zero_vector_stays_zero_with_a_finite_gradient(fn):
  zero = jnp.zeros((4,))
  assert np.all(np.asarray(fn(zero)) == 0.0)
  grad = jax.grad(lambda v: jnp.sum(fn(v) * jnp.arange(1.0, 5.0)))(zero)
  assert np.all(np.isfinite(grad))


@pytest.mark.parametrize("fn", [l2_normalize, l2_normalize_additive])
def test_gradient_matches_finite_differences(fn):
  x0 = np.array([0.3, -1.2, 0.7], np.float64)
  w = np.array([0.5, 2.0, -1.0])
  grad = np.asarray(jax.grad(lambda v: jnp.sum(fn(v) * w))(jnp.asarray(x0, jnp.float32)))
  ref = _np_clamped if fn is l2_normalize else _np_additive
  h = 1e-6
  fd = [
    (np.sum(ref(x0 + h * e, 1e-8) * w) - np.sum(ref(x0 - h * e, 1e-8) * w)) / (2 * h)
    for e in np.eye(3)
  ]
  np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-5)


def test_one_function_serves_losses_and_models():
  assert losses.l2_normalize is l2_normalize
  for encoder in (cnn, region_encoder, text_gru, vsrn):
    assert encoder.l2_normalize is l2_normalize, encoder.__name__
