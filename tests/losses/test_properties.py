"""Invariances, numerics and gradients shared by every loss."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from jitr import losses
from tests.losses.conftest import make_batch

# name -> f(sim, positives, where, graded) -> scalar, every loss with non-default options too.
LOSSES = {
  "triplet_lmh": lambda s, p, w, g: losses.triplet(s, positives=p, where=w),
  "triplet_lsh": lambda s, p, w, g: losses.triplet(s, positives=p, where=w, mining="sum"),
  "smooth_ndcg": lambda s, p, w, g: losses.smooth_ndcg(
    s, g, positives=p, where=w, temperature=0.1, block_size=3
  ),
  "adaptive_listwise": lambda s, p, w, g: losses.adaptive_listwise(s, positives=p, where=w),
  "sam_hard": lambda s, p, w, g: losses.semantic_margin_triplet(
    s, 3 * g, positives=p, where=w, keep_triplet=True
  ),
  "sam_soft": lambda s, p, w, g: losses.semantic_margin_triplet(
    s, 3 * g, positives=p, where=w, sampling="soft"
  ),
  "lseh": lambda s, p, w, g: losses.semantic_hard_negatives(s, g, positives=p, where=w),
}
JITTED = {name: jax.jit(fn) for name, fn in LOSSES.items()}


def _args(seed, **kw):
  sim, pos, where, relevance, _ = make_batch(seed, **kw)
  return jnp.asarray(sim), jnp.asarray(pos), jnp.asarray(where), jnp.asarray(relevance)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_gradients_match_finite_differences(name):
  with jax.enable_x64(True):
    sim, pos, where, relevance = _args(3, n_img=3, captions_per_image=2)
    f = jax.jit(lambda s: LOSSES[name](s, pos, where, relevance.astype(jnp.float64)))
    check_grads(
      f, (sim.astype(jnp.float64),), order=1, modes=("rev",), eps=1e-6, atol=1e-5, rtol=1e-4
    )


def test_smooth_ndcg_gradient_at_small_temperature_matches_finite_differences():
  with jax.enable_x64(True):
    sim, pos, where, relevance = _args(4, n_img=4, captions_per_image=1)
    f = jax.jit(
      lambda s: losses.smooth_ndcg(s, relevance.astype(jnp.float64), temperature=0.01, block_size=2)
    )
    check_grads(
      f, (sim.astype(jnp.float64),), order=1, modes=("rev",), eps=1e-7, atol=1e-5, rtol=1e-4
    )


def _hard_matrices():
  ties = jnp.zeros((4, 4))
  duplicates = jnp.asarray(np.tile(np.array([[1.0, -1.0, 1.0, -1.0]], np.float32), (4, 1)))
  extremes = jnp.asarray(np.sign(np.random.default_rng(0).normal(size=(4, 4))).astype(np.float32))
  return {"ties": ties, "duplicate_columns": duplicates, "plus_minus_one": extremes}


def test_no_nan_or_inf_with_ties_duplicates_and_small_temperatures():
  relevance = jnp.asarray(np.random.default_rng(1).uniform(size=(4, 4)).astype(np.float32))
  fns = dict(LOSSES)
  fns["smooth_ndcg"] = lambda s, p, w, g, t: losses.smooth_ndcg(s, g, temperature=t)
  fns["adaptive_listwise"] = lambda s, p, w, g, t: losses.adaptive_listwise(s, sharpness=t)
  for name, fn in fns.items():
    takes_temperature = name in ("smooth_ndcg", "adaptive_listwise")
    step = jax.jit(
      jax.value_and_grad(fn if takes_temperature else (lambda s, p, w, g, t, fn=fn: fn(s, p, w, g)))
    )
    for matrix_name, sim in _hard_matrices().items():
      for temperature in (1e-4, 1e-2, 1.0):
        value, grad = step(sim, None, None, relevance, temperature)
        assert np.isfinite(float(value)), (name, matrix_name, temperature)
        assert np.isfinite(np.asarray(grad)).all(), (name, matrix_name, temperature)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_padding_via_where_leaves_the_loss_unchanged(name):
  sim, pos, where, relevance = _args(5, n_img=4, captions_per_image=2)
  padded_sim, padded_pos, padded_where, padded_rel = _args(
    5, n_img=4, captions_per_image=2, pad_img=2, pad_txt=3
  )
  # Same real block, garbage (large, tied) values in the padding.
  padded_sim = padded_sim.at[:4, :8].set(sim).at[4:, :].set(9.0).at[:, 8:].set(9.0)
  padded_rel = padded_rel.at[:4, :8].set(relevance)
  fn = JITTED[name]
  assert float(fn(padded_sim, padded_pos, padded_where, padded_rel)) == pytest.approx(
    float(fn(sim, pos, where, relevance)), rel=1e-5, abs=1e-6
  )


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_permuting_the_batch_consistently_leaves_the_loss_unchanged(name):
  sim, pos, where, relevance = _args(6, n_img=5, captions_per_image=2)
  rng = np.random.default_rng(0)
  pi, pt = rng.permutation(5), rng.permutation(10)
  permute = lambda m: m[pi][:, pt]
  fn = JITTED[name]
  assert float(fn(permute(sim), permute(pos), permute(where), permute(relevance))) == pytest.approx(
    float(fn(sim, pos, where, relevance)), rel=1e-5, abs=1e-6
  )


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_vmap_over_a_batch_of_batches_equals_a_loop(name):
  stacked = [
    jnp.stack(xs) for xs in zip(*(_args(seed, n_img=3, captions_per_image=2) for seed in range(3)))
  ]
  batched = jax.jit(jax.vmap(LOSSES[name]))(*stacked)
  looped = [float(JITTED[name](*(x[b] for x in stacked))) for b in range(3)]
  np.testing.assert_allclose(batched, looped, rtol=1e-5, atol=1e-6)
