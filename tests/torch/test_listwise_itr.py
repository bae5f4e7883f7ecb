"""TripletSNDCGLoss equals Listwise ITR's module (reference written from its code): the
7-tuple and the gradients to both embeddings, in both relevance orientations."""

import types

import numpy as np
import pytest
import torch

from jitr.torch import TripletSNDCGLoss
from tests.torch import listwise_itr_reference

OPT = types.SimpleNamespace(margin=0.2, tau=0.01, sndcg_weight=0.6, batch_size=8)


def _batch(seed, n, dim=6, emb=5):
  gen = torch.Generator().manual_seed(seed)
  v = torch.nn.functional.normalize(torch.randn(n, dim, generator=gen), dim=1)
  t = torch.nn.functional.normalize(torch.randn(n, dim, generator=gen), dim=1)
  return v, t, torch.randn(n, 5, emb, generator=gen), torch.randn(n, emb, generator=gen)


def _compare(n, orientation, seed=0):
  v, t, v_text, t_text = _batch(seed, n)
  ours_v, ours_t = v.clone().requires_grad_(True), t.clone().requires_grad_(True)
  ref_v, ref_t = v.clone().requires_grad_(True), t.clone().requires_grad_(True)
  ours = TripletSNDCGLoss(OPT, orientation=orientation)(ours_v, ours_t, v_text, t_text)
  ref = listwise_itr_reference.triplet_sndcg(
    ref_v, ref_t, v_text, t_text, OPT.margin, OPT.tau, OPT.sndcg_weight,
    corrected=orientation == "corrected",
  )  # fmt: skip
  assert len(ours) == 7 and not any(x.requires_grad for x in ours[1:])
  np.testing.assert_allclose(
    [x.item() for x in ours], [x.item() for x in ref], rtol=1e-5, atol=1e-6
  )
  ours[0].backward()
  ref[0].backward()
  torch.testing.assert_close(ours_v.grad, ref_v.grad, rtol=1e-5, atol=1e-5)
  torch.testing.assert_close(ours_t.grad, ref_t.grad, rtol=1e-5, atol=1e-5)
  return ours


@pytest.mark.parametrize("orientation", ["official", "corrected"])
def test_matches_the_reference_module(orientation):
  _compare(8, orientation)


def test_a_ragged_last_batch_is_padded_and_matches_the_reference():
  _compare(5, "corrected", seed=1)


def test_the_orientations_differ_only_in_the_text_to_image_terms():
  official = _compare(6, "official", seed=2)
  corrected = _compare(6, "corrected", seed=2)
  for index in (1, 3, 4):  # pairwise, ndcg_t, real_ndcg_t
    assert official[index].item() == pytest.approx(corrected[index].item())
  assert official[5].item() != pytest.approx(corrected[5].item())  # ndcg_v


def test_bad_orientation_is_a_clear_error():
  with pytest.raises(ValueError, match="orientation: expected one of"):
    TripletSNDCGLoss(OPT, orientation="transposed")
