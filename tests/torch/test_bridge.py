"""jitr.torch.loss: values and gradients equal the JAX losses and independent PyTorch
versions; float64 gradcheck; DLPack without copies; one clear error per bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from jitr import losses
from jitr.torch import bridge
from tests.losses.conftest import make_batch
from tests.torch import torch_reference

TOL = dict(rtol=1e-5, atol=1e-5)


def _registry_calls():
  """``(name, positional graded args, kwargs)`` for every loss of the registry."""
  sim, pos, where, rel, metric = make_batch(3, n_img=4, captions_per_image=2, pad_img=1, pad_txt=2)
  masks = dict(positives=pos, where=where)
  graded = {"relevance": rel, "metric": metric, "semantic": rel}
  extra = {"semantic_margin_triplet": dict(sampling="random", key=jax.random.key(0))}
  for name, spec in losses.LOSSES.items():
    args = () if spec.graded is None else (graded[spec.graded],)
    yield name, sim, args, {**masks, **extra.get(name, {})}


def _torch(x):
  return torch.from_numpy(np.asarray(x))


# The bridge does not depend on the loss; the losses it was not written around run as slow.
CORE = ("triplet", "smooth_ndcg")


@pytest.mark.parametrize(
  "name",
  [n if n in CORE else pytest.param(n, marks=pytest.mark.slow) for n in losses.LOSSES],
)
def test_every_registered_loss_matches_jax_in_value_and_gradient(name):
  (_, sim, args, kwargs) = next(c for c in _registry_calls() if c[0] == name)
  fn = losses.LOSSES[name].fn
  value, grad = jax.jit(jax.value_and_grad(lambda s: fn(s, *args, **kwargs)))(jnp.asarray(sim))
  t_sim = _torch(sim).clone().requires_grad_(True)
  t_kwargs = {k: (_torch(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
  out = bridge.loss(name, t_sim, *map(_torch, args), **t_kwargs)
  out.backward()
  np.testing.assert_allclose(out.item(), float(value), **TOL)
  np.testing.assert_allclose(t_sim.grad.numpy(), np.asarray(grad), **TOL)


def test_objective_matches_jax_and_returns_its_parts():
  sim, pos, where, rel, _ = make_batch(4, pad_img=1, pad_txt=1)
  obj = losses.objective(
    {"triplet": {"weight": 0.5, "mining": "sum"}, "smooth_ndcg": {"weight": 2.0}}
  )
  jax_kwargs = dict(positives=pos, where=where, graded={"relevance": rel})

  def total(s):
    return obj(s, **jax_kwargs)

  (value, parts), grad = jax.jit(jax.value_and_grad(total, has_aux=True))(jnp.asarray(sim))
  t_sim = _torch(sim).clone().requires_grad_(True)
  t_value, t_parts = bridge.loss(
    obj, t_sim, positives=_torch(pos), where=_torch(where), graded={"relevance": _torch(rel)}
  )
  t_value.backward()
  np.testing.assert_allclose(t_value.item(), float(value), **TOL)
  np.testing.assert_allclose(t_sim.grad.numpy(), np.asarray(grad), **TOL)
  assert set(t_parts) == {"triplet", "smooth_ndcg"}
  for term, v in parts.items():
    np.testing.assert_allclose(t_parts[term].item(), float(v), **TOL)
    assert not t_parts[term].requires_grad


@pytest.mark.parametrize("mining", ["max", "sum"])
def test_triplet_matches_a_pytorch_version_of_the_formula(mining):
  sim = torch.rand(7, 7, generator=torch.Generator().manual_seed(1)) * 2 - 1
  ours = sim.clone().requires_grad_(True)
  ref = sim.clone().requires_grad_(True)
  out = bridge.loss("triplet", ours, margin=0.2, mining=mining)
  expected = torch_reference.triplet(ref, margin=0.2, mining=mining)
  out.backward()
  expected.backward()
  torch.testing.assert_close(out, expected, **TOL)
  torch.testing.assert_close(ours.grad, ref.grad, **TOL)


def test_smooth_ndcg_matches_a_pytorch_version_of_the_formula():
  gen = torch.Generator().manual_seed(2)
  sim = torch.rand(6, 6, generator=gen) * 2 - 1
  rel = torch.rand(6, 6, generator=gen)
  ours = sim.clone().requires_grad_(True)
  ref = sim.clone().requires_grad_(True)
  out = bridge.loss("smooth_ndcg", ours, rel, temperature=0.1)
  expected = torch_reference.smooth_ndcg(ref, rel, tau=0.1)
  out.backward()
  expected.backward()
  torch.testing.assert_close(out, expected, **TOL)
  torch.testing.assert_close(ours.grad, ref.grad, **TOL)
  assert rel.grad is None  # data, not differentiated


@pytest.mark.parametrize(
  "name, extra",
  [("triplet", {"mining": "max"}), ("triplet", {"mining": "sum"}), ("smooth_ndcg", {})],
)
def test_gradcheck_in_float64(name, extra):
  gen = torch.Generator().manual_seed(5)
  sim = (torch.rand(4, 4, generator=gen, dtype=torch.float64) * 2 - 1).requires_grad_(True)
  rel = torch.rand(4, 4, generator=gen, dtype=torch.float64)
  args = (rel,) if name == "smooth_ndcg" else ()
  hyper = {"temperature": 0.5} if name == "smooth_ndcg" else extra
  with jax.enable_x64(True):
    assert torch.autograd.gradcheck(
      lambda s: bridge.loss(name, s, *args, **hyper), (sim,), eps=1e-6, atol=1e-6
    )


def test_grad_output_scales_the_gradient_and_no_grad_skips_it():
  sim = torch.randn(5, 5, generator=torch.Generator().manual_seed(0))
  a = sim.clone().requires_grad_(True)
  b = sim.clone().requires_grad_(True)
  bridge.loss("triplet", a).backward()
  (3.0 * bridge.loss("triplet", b)).backward()
  torch.testing.assert_close(b.grad, 3.0 * a.grad)
  with torch.no_grad():
    out = bridge.loss("triplet", sim.clone().requires_grad_(True))
  assert not out.requires_grad


def test_inputs_and_gradient_cross_by_dlpack_without_a_copy(monkeypatch):
  """On CPU the JAX input is the tensor's buffer, and the gradient tensor is the JAX
  gradient's buffer (checked by data pointer on both crossings)."""
  seen_in, seen_out = [], []
  real_to_jax, real_to_torch = bridge.to_jax, bridge.to_torch

  def spy_to_jax(t):
    a = real_to_jax(t)
    seen_in.append((t.data_ptr(), a.unsafe_buffer_pointer()))
    return a

  def spy_to_torch(a):
    t = real_to_torch(a)
    seen_out.append((a.unsafe_buffer_pointer(), t.data_ptr()))
    return t

  monkeypatch.setattr(bridge, "to_jax", spy_to_jax)
  monkeypatch.setattr(bridge, "to_torch", spy_to_torch)
  sim = torch.randn(16, 16).requires_grad_(True)
  rel = torch.rand(16, 16)
  bridge.loss("smooth_ndcg", sim, rel).backward()
  assert [p for p, _ in seen_in] == [sim.data_ptr(), rel.data_ptr()]
  assert all(t == a for t, a in seen_in)
  assert len(seen_out) == 2 and all(a == t for a, t in seen_out)  # the loss, then ∂L/∂sim


def test_an_unaligned_view_is_copied_by_jax():
  """XLA on CPU needs aligned buffers: a view at a 4-byte offset crosses by a copy."""
  base = torch.randn(65)
  view = base[1:]
  assert bridge.to_jax(view).unsafe_buffer_pointer() != view.data_ptr()
  np.testing.assert_array_equal(np.asarray(bridge.to_jax(view)), view.numpy())


def test_a_nan_in_a_valid_entry_is_one_clear_error_and_padding_may_hold_nan():
  sim = torch.randn(4, 4)
  rel = torch.rand(4, 4)
  rel[1, 2] = float("nan")
  with pytest.raises(ValueError, match=r"smooth_ndcg is nan from non-finite values in relevance"):
    bridge.loss("smooth_ndcg", sim, rel)
  where = torch.ones(4, 4, dtype=torch.bool)
  where[1] = False
  sim[1, 0] = float("inf")
  assert torch.isfinite(bridge.loss("smooth_ndcg", sim, rel, where=where))
  with pytest.raises(ValueError, match=r"valid entries \(where=True\) of sim"):
    bridge.loss("triplet", sim, where=torch.ones(4, 4, dtype=torch.bool))


def test_tensors_on_different_devices_are_one_clear_error():
  with pytest.raises(ValueError, match="one device.*sim on cpu.*relevance on meta"):
    bridge.loss("smooth_ndcg", torch.randn(3, 3), relevance=torch.empty(3, 3, device="meta"))


def test_float64_without_x64_and_unknown_names_are_clear_errors():
  if jax.config.jax_enable_x64:
    pytest.skip("x64 mode is on in this process")
  with pytest.raises(ValueError, match="float64 tensor: JAX's x64 mode is off"):
    bridge.loss("triplet", torch.randn(3, 3, dtype=torch.float64))
  with pytest.raises(ValueError, match="unknown name 'tripplet'"):
    bridge.loss("tripplet", torch.randn(3, 3))
  with pytest.raises(ValueError, match="must return a scalar"):
    bridge.loss("triplet", torch.randn(3, 3), reduction="none")
