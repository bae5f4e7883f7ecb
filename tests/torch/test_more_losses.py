"""CMAL²R, SAM, LSEH, Smooth-NDCG@M and windowed Smooth-NDCG through the bridge: values and
gradients equal independent PyTorch versions of their formulas, and float64 gradcheck holds."""

import jax
import pytest
import torch

from jitr.torch import bridge
from tests.torch import torch_reference

TOL = dict(rtol=1e-5, atol=1e-5)


def _scores(seed: int, n: int = 5, dtype=torch.float32):
  gen = torch.Generator().manual_seed(seed)
  sim = torch.rand(n, n, generator=gen, dtype=dtype) * 2 - 1
  graded = torch.rand(n, n, generator=gen, dtype=dtype)
  return sim, graded


CASES = {
  "semantic_hard_negatives": (
    lambda s, g: bridge.loss("semantic_hard_negatives", s, g, margin=0.185, semantic_weight=0.5),
    lambda s, g: torch_reference.semantic_hard_negatives(s, g, 0.185, 0.5),
  ),
  "adaptive_listwise": (
    lambda s, g: bridge.loss("adaptive_listwise", s, sharpness=0.5, alpha=0.4),
    lambda s, g: torch_reference.adaptive_listwise(s, 0.5, 0.4),
  ),
  "smooth_ndcg_top_m": (
    lambda s, g: bridge.loss("smooth_ndcg", s, g, temperature=0.5, top_m=2),
    lambda s, g: torch_reference.smooth_ndcg(s, g, 0.5, top_m=2),
  ),
  "smooth_ndcg_window": (
    lambda s, g: bridge.loss("smooth_ndcg", s, g, temperature=0.05, window=True),
    lambda s, g: torch_reference.smooth_ndcg(s, g, 0.05),
  ),
  "semantic_margin_triplet": (
    lambda s, g: bridge.loss("semantic_margin_triplet", s, g, temperature=2.0, sampling="hard"),
    lambda s, g: torch_reference.semantic_margin_triplet(s, g, 2.0),
  ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_a_pytorch_version_of_the_formula(name):
  ours, reference = CASES[name]
  sim, graded = _scores(3)
  a = sim.clone().requires_grad_(True)
  b = sim.clone().requires_grad_(True)
  value, expected = ours(a, graded), reference(b, graded)
  value.backward()
  expected.backward()
  assert expected.item() > 0  # the hinge / log terms are active
  torch.testing.assert_close(value, expected, **TOL)
  torch.testing.assert_close(a.grad, b.grad, **TOL)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_in_float64(name):
  ours, _ = CASES[name]
  sim, graded = _scores(4, dtype=torch.float64)
  with jax.enable_x64(True):
    assert torch.autograd.gradcheck(
      lambda s: ours(s, graded), (sim.requires_grad_(True),), eps=1e-6, atol=1e-6
    )
