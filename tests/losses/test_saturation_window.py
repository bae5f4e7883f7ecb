"""Windowed soft ranks: the sorted walk over unsaturated neighbours equals the full sum
(values and gradients, with padding), by hand where pairs saturate, and in Smooth-NDCG."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses
from jitr.losses import saturation_window as window_lib
from tests.losses.conftest import make_batch


def _scores(seed: int, n: int, spread: float, pad: float = 0.2):
  rng = np.random.default_rng(seed)
  scores = jnp.asarray(rng.normal(size=n) * spread, jnp.float32)
  return scores, jnp.asarray(rng.uniform(size=n) > pad)


@pytest.mark.parametrize(
  ("n", "spread", "temperature"),
  [(40, 0.3, 0.01), (300, 1.0, 0.001), (300, 0.05, 0.01)],
  ids=["some-saturated", "most-saturated", "close-together"],
)
def test_as_close_to_the_float64_sum_as_the_full_float32_sum(n, spread, temperature):
  """Values and gradients against the full sum in float64: the window's float32 error is at
  most twice the full float32 sum's own (a near-saturated pair's ``1 − tanh²`` is a few ulps
  either way) plus ``1e-7`` of the largest value."""
  scores, where = _scores(n, n, spread)
  g = np.random.default_rng(1).normal(size=n)

  def value_and_grad(ranks, dtype):
    s, w = jnp.asarray(scores, dtype), jnp.asarray(where)
    f = lambda s: jnp.sum(
      jnp.asarray(g, dtype) / jnp.log2(1.0 + ranks(s, temperature=temperature, where=w))
    )
    return np.asarray(ranks(s, temperature=temperature, where=w)), np.asarray(jax.grad(f)(s))

  with jax.enable_x64(True):
    exact = value_and_grad(losses.approx_ranks, jnp.float64)
  full = value_and_grad(losses.approx_ranks, jnp.float32)
  walked = value_and_grad(window_lib.window_ranks, jnp.float32)
  for got, base, want in zip(walked, full, exact):
    slack = 1e-7 * np.abs(want).max()
    assert np.abs(got - want).max() <= 2 * np.abs(base - want).max() + slack
  assert np.all(walked[0][~np.asarray(where)] == 1.0)


def test_far_apart_clusters_by_hand():
  """Two clusters 1 apart at τ = 0.01 (gap/τ = 100, saturated): each item of the low
  cluster counts the high one's 3 items as exactly 1, and ranks within its own."""
  scores = jnp.array([0.0, 1.0, 0.001, 1.001, 1.002, -0.001])
  ranks = window_lib.window_ranks(scores, temperature=0.01)
  within = lambda s, others: 1.0 + sum(1.0 / (1.0 + math.exp(-(o - s) / 0.01)) for o in others)
  low = [0.0, 0.001, -0.001]
  high = [1.0, 1.001, 1.002]
  want = [
    3.0 + within(s, [o for o in low if o != s])
    if s in low
    else within(s, [o for o in high if o != s])
    for s in [0.0, 1.0, 0.001, 1.001, 1.002, -0.001]
  ]
  np.testing.assert_allclose(ranks, want, rtol=5e-6)  # float32 gaps of scores near 1
  partners = window_lib.unsaturated_partners(scores, temperature=0.01)
  assert partners.tolist() == [2] * 6


def test_unsaturated_partners_count_within_the_saturation_width():
  scores, where = _scores(3, 200, 0.2)
  got = np.asarray(window_lib.unsaturated_partners(scores, temperature=0.01, where=where))
  s, w = np.asarray(scores), np.asarray(where)
  width = (math.log(200) + 24 * math.log(2)) * 0.01
  near = (np.abs(s[:, None] - s[None, :]) <= width) & w[None, :] & w[:, None]
  np.testing.assert_array_equal(got, np.where(w, near.sum(1) - 1, 0))


def test_a_nan_score_gives_nan_ranks_and_ends():
  scores = jnp.array([0.1, jnp.nan, 0.3, 0.2])
  ranks = jax.jit(lambda s: window_lib.window_ranks(s, temperature=0.01))(scores)
  assert np.isnan(np.asarray(ranks)).any()


def test_smooth_ndcg_with_the_window_equals_it_without():
  """Padded rows and columns, positives, blocks of 2 rows (the walk runs as long as a
  block's widest row), @3 (the chosen candidates' windowed ranks gathered; the whole
  windowed loss is checked against a PyTorch version through the bridge)."""
  top_m = 3
  sim, pos, where, relevance, _ = make_batch(5, n_img=6, captions_per_image=2, pad_img=1, pad_txt=2)
  sim, relevance = jnp.asarray(sim), jnp.asarray(relevance)

  def value_and_grad(window):
    f = lambda s: losses.smooth_ndcg(
      s, relevance, positives=pos, where=where, temperature=0.02, block_size=2, top_m=top_m,
      window=window,
    )  # fmt: skip
    return jax.value_and_grad(f)(sim)

  (full, g_full), (walked, g_walked) = value_and_grad(False), value_and_grad(True)
  assert float(walked) == pytest.approx(float(full), rel=1e-6)
  np.testing.assert_allclose(g_walked, g_full, atol=1e-6)
