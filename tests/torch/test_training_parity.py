"""A few steps of a small PyTorch model: trained with the bridge or with the independent
PyTorch loss of the same formula, it reaches the same parameters."""

import pytest
import torch

import jitr.torch
from tests.torch import torch_reference


def _train(loss_of, steps: int = 4) -> list[torch.Tensor]:
  """Two linear towers (image 10 -> 8, caption 12 -> 8), l2-normalised, SGD(lr 0.5) on
  ``loss_of(sim)`` over the same 4 batches of 6 pairs; returns the final parameters."""
  torch.manual_seed(0)
  images, captions = torch.nn.Linear(10, 8), torch.nn.Linear(12, 8)
  params = [*images.parameters(), *captions.parameters()]
  optimizer = torch.optim.SGD(params, lr=0.5)
  data = torch.Generator().manual_seed(1)
  batches = [(torch.randn(6, 10, generator=data), torch.randn(6, 12, generator=data))]
  batches *= steps
  for img, cap in batches:
    img_emb = torch.nn.functional.normalize(images(img), dim=1)
    cap_emb = torch.nn.functional.normalize(captions(cap), dim=1)
    optimizer.zero_grad()
    loss_of(img_emb @ cap_emb.T).backward()
    optimizer.step()
  return [p.detach().clone() for p in params]


@pytest.mark.parametrize("mining", ["max", "sum"])
def test_triplet_trains_to_the_same_parameters(mining):
  bridge = _train(lambda sim: jitr.torch.loss("triplet", sim, margin=0.2, mining=mining))
  reference = _train(lambda sim: torch_reference.triplet(sim, margin=0.2, mining=mining))
  start = _train(lambda sim: 0.0 * sim.sum(), steps=1)
  assert any((b - s).abs().max() > 1e-3 for b, s in zip(bridge, start, strict=True))  # moved
  for b, r in zip(bridge, reference, strict=True):
    torch.testing.assert_close(b, r, rtol=1e-5, atol=1e-5)


def test_smooth_ndcg_trains_to_the_same_parameters():
  relevance = torch.rand(6, 6, generator=torch.Generator().manual_seed(2))
  bridge = _train(lambda sim: jitr.torch.loss("smooth_ndcg", sim, relevance, temperature=0.1))
  reference = _train(lambda sim: torch_reference.smooth_ndcg(sim, relevance, 0.1))
  for b, r in zip(bridge, reference, strict=True):
    torch.testing.assert_close(b, r, rtol=1e-5, atol=1e-5)
