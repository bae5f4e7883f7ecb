"""bfloat16 inputs: the loss and the gradient come back in the input's dtype, and equal the
float32 computation on the same (bfloat16-rounded) scores to bfloat16's precision."""

import pytest
import torch

import jitr.torch
from tests.torch import torch_reference


def _bf16_and_f32(seed: int, n: int = 6):
  """The same scores as a bfloat16 leaf and as a float32 leaf (its exact float32 values)."""
  gen = torch.Generator().manual_seed(seed)
  bf16 = torch.randn(n, n, generator=gen).to(torch.bfloat16).requires_grad_()
  return bf16, bf16.detach().float().requires_grad_()


@pytest.mark.parametrize("mining", ["max", "sum"])
def test_triplet_in_bfloat16(mining):
  bf16, f32 = _bf16_and_f32(0)
  loss = jitr.torch.loss("triplet", bf16, margin=0.2, mining=mining)
  loss.backward()
  assert loss.dtype == bf16.grad.dtype == torch.bfloat16
  expected = torch_reference.triplet(f32, margin=0.2, mining=mining)
  expected.backward()
  torch.testing.assert_close(loss.float(), expected, rtol=1e-2, atol=1e-2)
  torch.testing.assert_close(bf16.grad.float(), f32.grad, rtol=1e-2, atol=1e-2)


def test_smooth_ndcg_in_bfloat16():
  bf16, f32 = _bf16_and_f32(1)
  relevance = torch.rand(6, 6, generator=torch.Generator().manual_seed(2))
  loss = jitr.torch.loss("smooth_ndcg", bf16, relevance, temperature=0.1)
  loss.backward()
  assert loss.dtype == bf16.grad.dtype == torch.bfloat16
  expected = torch_reference.smooth_ndcg(f32, relevance, 0.1)
  expected.backward()
  torch.testing.assert_close(loss.float(), expected, rtol=2e-2, atol=2e-2)
  torch.testing.assert_close(bf16.grad.float(), f32.grad, rtol=5e-2, atol=5e-2)
