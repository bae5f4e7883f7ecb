"""jitr.torch.per_query: per-query values and the gradient of any function of them equal
JAX's (a vector-Jacobian product), float64 gradcheck, and one clear error for NaN."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import jitr.torch
from jitr import losses
from tests.losses.conftest import make_batch

TOL = dict(rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["triplet", "smooth_ndcg"])
def test_per_query_values_and_their_gradient_equal_jax(name):
  sim, pos, where, rel, _ = make_batch(7, n_img=4, captions_per_image=2, pad_img=1, pad_txt=1)
  args = (rel,) if name == "smooth_ndcg" else ()
  kwargs = dict(positives=pos, where=where, reduction="none")
  fn = losses.LOSSES[name].fn
  weights_i2t = np.linspace(0.5, 2.0, sim.shape[0]).astype(np.float32)
  weights_t2i = np.linspace(2.0, 0.1, sim.shape[1]).astype(np.float32)

  def weighted(s):
    out = fn(s, *args, **kwargs)
    total = jnp.sum(weights_i2t * out.image_to_text) + jnp.sum(weights_t2i * out.text_to_image)
    return total, out

  # JAX's values and gradient from one compiled program.
  (_, expected), expected_grad = jax.jit(jax.value_and_grad(weighted, has_aux=True))(
    jnp.asarray(sim)
  )
  t_sim = torch.from_numpy(np.asarray(sim)).clone().requires_grad_(True)
  t_args = [torch.from_numpy(np.asarray(a)) for a in args]
  t_kwargs = {**kwargs, "positives": torch.from_numpy(pos), "where": torch.from_numpy(where)}
  out = jitr.torch.per_query(name, t_sim, *t_args, **t_kwargs)
  assert out.image_to_text.shape == (sim.shape[0],) and out.text_to_image.shape == (sim.shape[1],)
  np.testing.assert_allclose(
    out.image_to_text.detach().numpy(), np.asarray(expected.image_to_text), **TOL
  )
  np.testing.assert_allclose(
    out.text_to_image.detach().numpy(), np.asarray(expected.text_to_image), **TOL
  )
  total = (torch.from_numpy(weights_i2t) * out.image_to_text).sum()
  total = total + (torch.from_numpy(weights_t2i) * out.text_to_image).sum()
  total.backward()
  np.testing.assert_allclose(t_sim.grad.numpy(), np.asarray(expected_grad), **TOL)
  assert np.abs(np.asarray(expected_grad)).max() > 1e-3  # a gradient to compare


def test_gradcheck_of_per_query_values_in_float64():
  gen = torch.Generator().manual_seed(3)
  sim = (torch.rand(4, 4, generator=gen, dtype=torch.float64) * 2 - 1).requires_grad_(True)
  with jax.enable_x64(True):
    assert torch.autograd.gradcheck(
      lambda s: tuple(jitr.torch.per_query("triplet", s, mining="sum", reduction="none")),
      (sim,),
      eps=1e-6,
      atol=1e-6,
    )


def test_nan_in_a_valid_entry_is_one_clear_error():
  sim = torch.randn(3, 3)
  sim[0, 1] = float("nan")
  with pytest.raises(ValueError, match="per_query: triplet has non-finite values from non-fin"):
    jitr.torch.per_query("triplet", sim, reduction="none")
