"""A train step on teacher relevance combined with RSC: 8 devices = 1 device."""

import jax
import numpy as np
import pytest

from jitr.training.graded import make_graded_fn
from tests.training import tiny

TEACHER = "/runs/vse"


def _batch():
  """tiny's batch with stored RSC vectors and a teacher's image / caption embeddings per row."""
  batch = tiny.make_batch(seed=5)
  rng = np.random.default_rng(7)
  ids = batch["image_ids"]
  batch["vectors/x/references"] = batch.pop("reference_vectors")
  batch["vectors/x/captions"] = batch.pop("caption_vectors")
  batch[f"teacher/{TEACHER}/images"] = rng.normal(size=(8, 4)).astype(np.float32)[ids]
  batch[f"teacher/{TEACHER}/captions"] = rng.normal(size=(len(ids), 4)).astype(np.float32)
  return batch


def test_eight_devices_equal_one_device_on_hmean_teacher_relevance():
  assert jax.device_count() == 8, "tests/conftest.py asks XLA for 8 host devices"
  graded_fn = make_graded_fn(
    {"relevance": f"hmean:vectors:x|teacher:{TEACHER}"}, aggregates={"x": "max"}
  )
  batch, state = _batch(), tiny.make_state()
  (ref_state, ref_metrics), (new_state, metrics) = tiny.one_and_parallel_steps(
    tiny.MODEL, state, batch, graded_fn=graded_fn
  )
  for name in ("loss", "loss/smooth_ndcg", "ndcg_i2t", "ndcg_t2i"):
    assert float(metrics[name]) == pytest.approx(float(ref_metrics[name]), abs=1e-5), name
  tiny.assert_params_close(ref_state, new_state)
