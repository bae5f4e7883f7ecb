"""Fixtures for the loss tests: random batches with several positives and padding."""

import numpy as np
import pytest


def make_batch(
  seed: int, n_img: int = 4, captions_per_image: int = 2, pad_img: int = 0, pad_txt: int = 0
):
  """A batch where each image owns ``captions_per_image`` captions, plus padding.

  Returns numpy ``sim, positives, where, relevance, metric`` with padded rows
  and columns at the end.
  """
  rng = np.random.default_rng(seed)
  n_txt = n_img * captions_per_image
  owner = np.repeat(np.arange(n_img), captions_per_image)
  positives = owner[None, :] == np.arange(n_img)[:, None]
  shape = (n_img + pad_img, n_txt + pad_txt)
  sim = rng.uniform(-1, 1, shape).astype(np.float32)
  pos = np.zeros(shape, bool)
  pos[:n_img, :n_txt] = positives
  where = np.zeros(shape, bool)
  where[:n_img, :n_txt] = True
  relevance = rng.uniform(0, 1, shape).astype(np.float32)
  relevance[pos] = 1.0
  metric = rng.uniform(0, 3, shape).astype(np.float32)
  return sim, pos, where, relevance, metric


@pytest.fixture
def batch():
  return make_batch(0)
