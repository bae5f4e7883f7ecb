"""VSRN against a PyTorch reference written from the official equations
(``vsrn_reference.py``: ``EncoderImagePrecompAttn``, ``Rs_GCN``, ``EncoderText``,
``S2VTAttModel``, ``LanguageModelCriterion``), weights carried over by the converter."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from vsrn_reference import flat_state_dict, inputs, torch_forward, torch_vsrn  # noqa: E402

from jitr.models.vsrn import VSRN  # noqa: E402
from jitr.models.vsrn.convert import config_from_state_dict, params_from_state_dict  # noqa: E402

CASES = {  # name -> (torch f30k, torch l2norm dim, jax region_l2norm_axis)
  "coco": (False, 1, "regions"),
  "f30k": (True, 1, "regions"),
  "coco-features": (False, 2, "features"),
}


def jax_forward(state_dict, images, tokens, lengths, train, axis="regions"):
  params, stats = params_from_state_dict(state_dict)
  model = VSRN(**config_from_state_dict(state_dict), region_l2norm_axis=axis, caption_dropout=0.0)
  variables = {"params": params, "batch_stats": stats}

  @jax.jit
  def run(variables, images, tokens, lengths):
    (img, regions, mask), upd = model.apply(
      variables, images, None, train, method=model.encode_image, mutable=["batch_stats"]
    )
    txt = model.apply(variables, tokens, lengths, method=model.encode_text)
    ll = model.apply(
      variables, regions, mask, tokens, lengths, train, method=model.caption_log_likelihood
    )
    loss = model.apply(variables, regions, mask, tokens, lengths, method=model.caption_loss)
    return img, regions, txt, ll, loss, upd["batch_stats"]

  out = run(variables, jnp.asarray(images), jnp.asarray(tokens), jnp.asarray(lengths))
  return jax.tree.map(np.asarray, out)


@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_embeddings_and_caption_likelihood_match_torch_reference(case, train):
  f30k, dim, axis = CASES[case]
  parts = torch_vsrn(f30k=f30k, region_dim=dim)
  state = flat_state_dict(parts)
  images, tokens, lengths = inputs(seed=1 if train else 0)
  want = torch_forward(parts, images, tokens, lengths, train=train)
  img, regions, txt, ll, loss, stats = jax_forward(state, images, tokens, lengths, train, axis)
  assert img.shape == (3, 8) and txt.shape == (3, 8) and ll.shape == (3,)
  assert np.std(want[0]) > 0.05 and np.std(want[3]) > 0.5  # a non-degenerate comparison
  for got, ref in zip((img, regions, txt, ll), want):
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=1e-6)
  np.testing.assert_allclose(loss, -np.sum(want[3]) / 3, rtol=1e-6)
  # 'regions' (official): each feature has unit norm across the regions; 'features': each region
  np.testing.assert_allclose(np.linalg.norm(regions, axis=dim), 1.0, rtol=1e-5)
  if train:  # the running statistics PyTorch leaves behind (momentum 0.1, unbiased var)
    _, want_stats = params_from_state_dict(flat_state_dict(parts))
    _, before = params_from_state_dict(state)
    moved = before["img_enc"]["Rs_GCN_1"]["W_bn"]["mean"]
    assert not np.allclose(want_stats["img_enc"]["Rs_GCN_1"]["W_bn"]["mean"], moved)
    jax.tree.map(
      lambda g, w: np.testing.assert_allclose(g, w, atol=1e-5, rtol=1e-5), stats, want_stats
    )
