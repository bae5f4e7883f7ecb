"""Query rows a chunk at a time (``query_chunks``): refused in one line where they cannot
apply. That they give the whole rows' loss, metrics and update, on one device and on eight
beside GradCache, is checked with GradCache's chunks (tests/training/test_grad_cache.py)."""

import dataclasses

import jax
import pytest

from jitr import training
from tests.training import tiny
from tests.training.test_grad_cache import _step as grad_cache_step


def _step(query_chunks, axis_name=None, grad_chunks=1):
  return grad_cache_step(grad_chunks, axis_name=axis_name, query_chunks=query_chunks)


def test_chunks_that_cannot_apply_are_refused():
  with pytest.raises(ValueError, match=r"^query_chunks: expected an int >= 1, got 0$"):
    _step(0)
  batch = tiny.make_batch(seed=4, n_images=5, captions_per_image=2)  # 10 rows
  refused = r"^config.query_chunks: 4 chunks do not split a device's 10 rows; expected a divisor"
  with pytest.raises(ValueError, match=refused):
    jax.jit(_step(4))(tiny.make_state(), batch)
  pairwise = dataclasses.replace(tiny.MODEL, pairwise=True)
  with pytest.raises(ValueError, match=r"^config.query_chunks: the network scores each"):
    training.make_train_step(tiny.LOSS_FN, model=pairwise, query_chunks=2)
