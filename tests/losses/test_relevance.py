import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses
from tests.losses import numpy_reference as ref


def test_rsc_relevance_matches_numpy():
  rng = np.random.default_rng(0)
  refs = rng.normal(size=(3, 5, 8)).astype(np.float32)
  caps = rng.normal(size=(6, 8)).astype(np.float32)
  positives = np.repeat(np.eye(3, dtype=bool), 2, axis=1)
  got = np.asarray(
    losses.relevance_from_embeddings(jnp.asarray(refs), jnp.asarray(caps), positives=positives)
  )
  np.testing.assert_allclose(got, ref.rsc_relevance(refs, caps, positives), atol=1e-6)
  assert got.min() >= 0.0 and got.max() <= 1.0
  assert (got[positives] == 1.0).all()


def test_masked_references_are_ignored():
  refs = jnp.array([[[1.0, 0.0], [0.0, 1.0]]])
  caps = jnp.array([[0.0, 1.0]])
  full = losses.relevance_from_embeddings(refs, caps)
  masked = losses.relevance_from_embeddings(refs, caps, reference_mask=jnp.array([[True, False]]))
  assert float(full[0, 0]) == pytest.approx(1.0)
  assert float(masked[0, 0]) == pytest.approx(0.5)  # only the orthogonal reference is left
