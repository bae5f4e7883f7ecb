import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses
from jitr.training.graded import make_graded_fn, parse_source


def _batch():
  rng = np.random.default_rng(0)
  return {
    "vectors/lsa/captions": jnp.asarray(rng.normal(size=(3, 4)), jnp.float32),
    "vectors/lsa/references": jnp.asarray(rng.normal(size=(3, 2, 4)), jnp.float32),
    "topk/cider/indices": jnp.array([[7, 8], [8, 9], [9, 7]]),
    "topk/cider/scores": jnp.array([[6.0, 2.0], [5.0, 1.0], [4.0, 3.0]]),
    "caption_indices": jnp.array([7, 8, 9]),
    "oracle_relevance": jnp.array([[0.2, 0.4, 0.6], [0.1, 0.3, 0.5], [0.0, 0.9, 0.8]]),
  }


def test_every_source_by_hand():
  batch, positives = _batch(), jnp.eye(3, dtype=bool)
  out = make_graded_fn(
    {"r": "vectors:lsa", "s": "cosine:lsa", "c": "topk:cider", "o": "oracle"},
    scales={"cider": 10.0},
  )(batch, positives)
  rsc = losses.relevance_from_embeddings(
    batch["vectors/lsa/references"], batch["vectors/lsa/captions"]
  )
  np.testing.assert_allclose(out["r"], np.where(np.eye(3, dtype=bool), 1.0, rsc), atol=1e-6)
  np.testing.assert_allclose(out["s"], 2 * np.asarray(rsc) - 1, atol=1e-6)  # raw max cosine
  # Raw CIDEr scores where the caption is in the image's list, 0 elsewhere; positives keep theirs.
  np.testing.assert_allclose(out["c"], [[6, 2, 0], [0, 5, 1], [3, 0, 4]], atol=1e-5)
  np.testing.assert_allclose(out["o"], [[1, 0.4, 0.6], [0.1, 1, 0.5], [0, 0.9, 1]], atol=1e-6)


def test_bad_sources_are_refused():
  assert parse_source("topk:cider") == ("topk", "cider")
  for bad in ("cider", "vectors:", "bm25:x"):
    with pytest.raises(ValueError, match="graded source"):
      parse_source(bad)
