"""Bucketed padding: never changes a value or gradient; a ragged epoch compiles once."""

import doctest

import numpy as np
import pytest
import torch

from jitr import losses
from jitr.torch import bridge, buckets


def test_docstring_examples():
  assert doctest.testmod(buckets).failed == 0


def test_bucket_sizes():
  assert [buckets.bucket_size(n) for n in (1, 2, 3, 64, 65, 100)] == [1, 2, 4, 64, 128, 128]
  assert [buckets.bucket_size(n, 64) for n in (1, 64, 65, 200)] == [64, 64, 128, 256]
  with pytest.raises(ValueError, match="bucket: expected 'pow2' or an int >= 1"):
    buckets.bucket_size(3, 0)


def _ragged_batch(seed, n_img=5, per_image=2):
  """``n_img`` images with ``per_image`` captions each (not square, several positives)."""
  gen = torch.Generator().manual_seed(seed)
  n_txt = n_img * per_image
  sim = torch.rand(n_img, n_txt, generator=gen) * 2 - 1
  positives = torch.arange(n_txt)[None, :] // per_image == torch.arange(n_img)[:, None]
  rel = torch.where(positives, 1.0, torch.rand(n_img, n_txt, generator=gen))
  return sim, positives, rel


def test_padding_never_changes_a_value_or_gradient():
  sim, positives, rel = _ragged_batch(0)
  obj = losses.objective({"lsh": {"loss": "triplet", "mining": "sum"}})
  calls = [
    ("smooth_ndcg", (rel,), dict(positives=positives, temperature=0.1)),
    (obj, (), dict(positives=positives, graded={"relevance": rel})),  # tensors inside a dict
  ]
  for fn, args, kwargs in calls:
    plain = sim.clone().requires_grad_(True)
    padded = sim.clone().requires_grad_(True)
    a = bridge.loss(fn, plain, *args, **kwargs)
    b = buckets.padded_loss(fn, padded, *args, bucket=8, **kwargs)
    a, b = (a, b) if isinstance(a, torch.Tensor) else (a[0], b[0])
    a.backward()
    b.backward()
    np.testing.assert_allclose(b.item(), a.item(), rtol=1e-6)
    assert padded.grad.shape == sim.shape
    np.testing.assert_allclose(padded.grad.numpy(), plain.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_an_epoch_with_a_ragged_last_batch_compiles_once_per_bucket():
  """29 items in batches of 8: sizes 8, 8, 8, 5. Unpadded: two shapes, two compiles;
  padded to powers of two: one."""
  sizes = [8, 8, 8, 5]
  gen = torch.Generator().manual_seed(1)

  def epoch(step):
    before = bridge.cache_size()
    for n in sizes:
      sim = torch.rand(n, n, generator=gen).requires_grad_(True)
      step(sim).backward()
    return bridge.cache_size() - before

  assert epoch(lambda s: bridge.loss("triplet", s, margin=0.3)) == 2
  assert epoch(lambda s: buckets.padded_loss("triplet", s, margin=0.4)) == 1
  assert epoch(lambda s: buckets.padded_loss("triplet", s, margin=0.4)) == 0  # cached
