"""The in-batch builders of jitr.losses.relevance against loops written here in numpy."""

import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses


def _numpy_reference_cosine(refs, caps, mask, aggregate):
  unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
  refs, caps = unit(refs.astype(np.float64)), unit(caps.astype(np.float64))
  out = np.full((refs.shape[0], caps.shape[0]), -1.0)
  for i in range(refs.shape[0]):
    valid = [k for k in range(refs.shape[1]) if mask[i, k]]
    for j in range(caps.shape[0]):
      cos = [float(refs[i, k] @ caps[j]) for k in valid]
      if cos:
        out[i, j] = max(cos) if aggregate == "max" else sum(cos) / len(cos)
  return out


@pytest.mark.parametrize("aggregate", ["max", "mean"])
def test_reference_cosine_and_relevance_match_numpy(aggregate):
  rng = np.random.default_rng(1)
  refs = rng.normal(size=(4, 3, 5)).astype(np.float32)
  caps = rng.normal(size=(6, 5)).astype(np.float32)
  mask = np.array([[1, 1, 1], [1, 0, 0], [0, 1, 1], [0, 0, 0]], bool)  # image 3 has none
  positives = np.zeros((4, 6), bool)
  positives[0, 1] = positives[3, 2] = True
  want = _numpy_reference_cosine(refs, caps, mask, aggregate)
  got = losses.reference_cosine(refs, caps, reference_mask=mask, aggregate=aggregate)
  np.testing.assert_allclose(got, want, atol=1e-6)
  rel = losses.relevance_from_embeddings(
    refs, caps, positives=positives, reference_mask=mask, aggregate=aggregate
  )
  np.testing.assert_allclose(rel, np.where(positives, 1.0, (1 + want) / 2), atol=1e-6)
  assert float(rel[3, 0]) == 0.0 and float(rel[3, 2]) == 1.0  # no reference: 0, positives 1


def test_topk_matrix_and_relevance_by_hand():
  idx = jnp.array([[4, 2, -1], [2, 3, 5]])
  scores = jnp.array([[7.0, 12.0, 9.0], [1.0, 0.5, 3.0]])
  caps = jnp.array([2, 3, 4])
  np.testing.assert_allclose(losses.topk_score_matrix(idx, scores, caps), [[12, 0, 7], [1, 0.5, 0]])
  positives = jnp.array([[False, True, False], [False, False, False]])
  rel = losses.relevance_from_topk(idx, scores, caps, scale=10.0, positives=positives)
  np.testing.assert_allclose(rel, [[1.0, 1.0, 0.7], [0.1, 0.05, 0.0]], atol=1e-6)  # 12/10 clips


def test_unknown_aggregate_is_refused():
  with pytest.raises(ValueError, match="aggregate: expected one of"):
    losses.relevance_from_embeddings(jnp.ones((1, 1, 2)), jnp.ones((1, 2)), aggregate="median")
