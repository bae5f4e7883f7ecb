import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.jax_compat import install_jax_util_wraps

install_jax_util_wraps()  # rax 0.4.0 calls jax.util.wraps (removed in JAX 0.10)
import rax  # noqa: E402

from jitr import losses  # noqa: E402
from jitr.losses.query_rows import IMAGE_TO_TEXT, QueryRows  # noqa: E402
from jitr.losses.smooth_ndcg import smooth_ndcg_queries  # noqa: E402
from tests.losses import numpy_reference as ref  # noqa: E402
from tests.losses.conftest import make_batch  # noqa: E402


def _one_row(scores, relevance, temperature):
  n = scores.shape[0]
  rows = QueryRows(
    scores[None],
    jnp.zeros((1, n), bool),
    jnp.ones((1, n), bool),
    relevance[None],
    jnp.arange(1),
    IMAGE_TO_TEXT,
  )
  loss, _ = smooth_ndcg_queries(rows, temperature=temperature, block_size=4)
  return loss[0]


def test_tied_two_by_two_by_hand():
  # All scores tie: both items get rank 1.5, NDCG = 1/log2(2.5) in every query.
  value = losses.smooth_ndcg(jnp.zeros((2, 2)), jnp.eye(2), temperature=0.1)
  assert float(value) == pytest.approx(2 * (1 - 1 / math.log2(2.5)), abs=1e-6)


def test_three_items_by_hand_at_small_temperature():
  # Ranks [1, 3, 2]: DCG = 1 + (√2 − 1)/2, IDCG = 1 + (√2 − 1)/log2(3).
  expected = (1 + (math.sqrt(2) - 1) / 2) / (1 + (math.sqrt(2) - 1) / math.log2(3))
  value = _one_row(jnp.array([0.3, 0.1, 0.2]), jnp.array([1.0, 0.5, 0.0]), 1e-4)
  assert float(value) == pytest.approx(1 - expected, abs=1e-6)


@functools.partial(jax.jit, static_argnums=2)  # one compilation per temperature, not per seed
def _ours_and_rax(scores, relevance, temperature):
  """``(value, gradient)`` of ``_one_row`` and of ``1 + rax``'s approx-NDCG loss."""
  rax_loss = rax.approx_t12n(rax.ndcg_metric, temperature=temperature)  # returns −NDCG
  ours = jax.value_and_grad(_one_row)(scores, relevance, temperature)
  theirs = jax.value_and_grad(lambda s: 1.0 + rax_loss(s, relevance))(scores)
  return ours, theirs


@pytest.mark.parametrize("temperature", [0.05, 0.1, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_row_equals_rax_approx_ndcg(temperature, seed):
  rng = np.random.default_rng(seed)
  scores = jnp.asarray(rng.uniform(-1, 1, 12), jnp.float32)
  relevance = jnp.asarray(rng.uniform(0, 1, 12), jnp.float32)
  (value, grad), (rax_value, rax_grad) = _ours_and_rax(scores, relevance, temperature)
  assert float(value) == pytest.approx(float(rax_value), abs=1e-5)
  np.testing.assert_allclose(grad, rax_grad, atol=1e-5)


def test_approaches_exact_ndcg_as_temperature_shrinks():
  rng = np.random.default_rng(3)
  scores = jnp.asarray(rng.permutation(20) / 20.0, jnp.float32)  # distinct, ≥ 0.05 apart
  relevance = jnp.asarray(rng.uniform(0, 1, 20), jnp.float32)
  exact = float(losses.ndcg(scores, relevance))
  gaps = [abs(1 - float(_one_row(scores, relevance, t)) - exact) for t in (0.1, 0.01, 1e-3)]
  assert gaps[0] > gaps[1] > gaps[2]
  assert gaps[2] < 1e-6


@pytest.mark.parametrize("top_k", [None, 1, 3, 10])
def test_exact_ndcg_matches_numpy_and_rax(top_k):
  rng = np.random.default_rng(4)
  for _ in range(5):
    scores = rng.uniform(-1, 1, 10).astype(np.float32)
    relevance = rng.integers(0, 4, 10).astype(np.float32) / 3
    valid = rng.uniform(size=10) > 0.2
    got = float(
      losses.ndcg(
        jnp.asarray(scores), jnp.asarray(relevance), where=jnp.asarray(valid), top_k=top_k
      )
    )
    assert got == pytest.approx(ref.exact_ndcg(scores, relevance, valid, top_k), abs=1e-6)
    assert got == pytest.approx(
      float(
        rax.ndcg_metric(
          jnp.asarray(scores), jnp.asarray(relevance), where=jnp.asarray(valid), topn=top_k
        )
      ),
      abs=1e-6,
    )


def test_ties_in_relevance_still_give_a_perfect_score():
  relevance = jnp.array([1.0, 1.0, 0.5, 0.5, 0.0])
  scores = jnp.array([0.9, 0.8, 0.5, 0.4, 0.1])
  assert float(losses.ndcg(scores, relevance)) == pytest.approx(1.0, abs=1e-7)
  assert float(_one_row(scores, relevance, 1e-3)) == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_matrix_matches_numpy_with_padding_and_positives(seed):
  sim, pos, where, relevance, _ = make_batch(
    seed, n_img=4, captions_per_image=2, pad_img=1, pad_txt=2
  )
  relevance[pos] = 0.3  # positives=... must override it back to 1
  got = losses.smooth_ndcg(
    jnp.asarray(sim), jnp.asarray(relevance), positives=pos, where=where, temperature=0.1
  )
  assert float(got) == pytest.approx(
    ref.smooth_ndcg(sim, relevance, where, 0.1, positives=pos), abs=1e-5
  )


@functools.partial(jax.jit, static_argnums=1)
def _smooth_ndcg_value_and_grad(sim, block_size):
  _, _, _, relevance, _ = make_batch(5, n_img=10, captions_per_image=1)
  f = lambda s: losses.smooth_ndcg(
    s, jnp.asarray(relevance), temperature=0.05, block_size=block_size
  )
  return jax.value_and_grad(f)(sim)


@pytest.mark.parametrize("block_size", [1, 3, 7, 64])
def test_block_size_does_not_change_values_or_gradients(block_size):
  sim = jnp.asarray(make_batch(5, n_img=10, captions_per_image=1)[0])
  value, grad = _smooth_ndcg_value_and_grad(sim, block_size)
  value_1, grad_1 = _smooth_ndcg_value_and_grad(sim, 10)  # one block; compiled once, reused
  assert float(value) == pytest.approx(float(value_1), abs=1e-6)
  np.testing.assert_allclose(grad, grad_1, atol=1e-6)


def test_forward_and_backward_memory_is_quadratic_not_cubic():
  n = 256
  sim = jnp.zeros((n, n), jnp.float32)
  relevance = jnp.zeros((n, n), jnp.float32)
  grad = jax.jit(jax.grad(lambda s, r: losses.smooth_ndcg(s, r, block_size=8)))
  temp = grad.lower(sim, relevance).compile().memory_analysis().temp_size_in_bytes
  cube = n**3 * 4
  assert temp < cube / 16, f"temporaries {temp} bytes vs one [N,N,N] f32 tensor {cube} bytes"


def test_approx_ranks_gradient_is_the_fused_reduction():
  # ∂(Σ_j g_j π̂_j)/∂s_m = Σ_j σ'_τ(s_j − s_m)(g_j − g_m), checked against plain autodiff.
  rng = np.random.default_rng(6)
  scores = jnp.asarray(rng.uniform(-1, 1, 9), jnp.float32)
  g = jnp.asarray(rng.normal(size=9), jnp.float32)
  where = jnp.asarray(rng.uniform(size=9) > 0.2)
  tau = 0.3

  def plain(s):
    d = jax.nn.sigmoid((s[None, :] - s[:, None]) / tau)
    mask = where[:, None] & where[None, :] & ~jnp.eye(9, dtype=bool)
    return jnp.sum(g * (1.0 + jnp.sum(jnp.where(mask, d, 0.0), axis=-1)))

  ours = lambda s: jnp.sum(g * losses.approx_ranks(s, temperature=tau, where=where))
  assert float(ours(scores)) == pytest.approx(float(plain(scores)), rel=1e-6)
  np.testing.assert_allclose(jax.grad(ours)(scores), jax.grad(plain)(scores), atol=1e-5)


def test_at_m_by_hand():
  # s = (0.9, 0.5, 0.1), r = (0, 1, 0.5): @1 keeps item 1 (gain 1), rank 2 at τ → 0, so
  # NDCG@1 = (1/log2 3) / 1; @2 adds item 2 (gain √2 − 1, rank 3): DCG = 1/log2 3 + (√2 − 1)/2
  scores, relevance = jnp.array([0.9, 0.5, 0.1]), jnp.array([0.0, 1.0, 0.5])
  rows = QueryRows(
    scores[None], jnp.zeros((1, 3), bool), jnp.ones((1, 3), bool), relevance[None],
    jnp.arange(1), IMAGE_TO_TEXT,
  )  # fmt: skip
  at = lambda m: float(smooth_ndcg_queries(rows, temperature=1e-4, top_m=m)[0][0])
  assert at(1) == pytest.approx(1 - 1 / math.log2(3), abs=1e-6)
  dcg2 = 1 / math.log2(3) + (math.sqrt(2) - 1) / 2
  assert at(2) == pytest.approx(1 - dcg2 / (1 + (math.sqrt(2) - 1) / math.log2(3)), abs=1e-6)
  assert at(3) == at(0)  # M >= C: every candidate


def _banded(n: int, k: int, seed: int) -> np.ndarray:
  """Relevance with exactly ``k`` gains in every row and column besides the diagonal."""
  rng = np.random.default_rng(seed)
  relevance = np.zeros((n, n), np.float32)
  for shift in range(1, k + 1):
    relevance[np.arange(n), (np.arange(n) + 2 * shift) % n] = rng.uniform(0.2, 0.9, n)
  return relevance


def test_at_m_equals_the_full_loss_when_no_other_candidate_has_a_gain():
  """Top-K relevance (K gains a row and a column, the positive one of them), M = K + 1:
  the same value and gradient as every candidate; a smaller M changes it."""
  n, k = 12, 3
  sim = jnp.asarray(np.random.default_rng(1).normal(size=(n, n)), jnp.float32)
  relevance, pos = jnp.asarray(_banded(n, k, 1)), jnp.eye(n, dtype=bool)

  def value_and_grad(m):
    f = lambda s: losses.smooth_ndcg(s, relevance, positives=pos, temperature=0.1, top_m=m)
    return jax.value_and_grad(f)(sim)

  (full, g_full), (at, g_at) = value_and_grad(0), value_and_grad(k + 1)
  assert float(at) == pytest.approx(float(full), abs=1e-6)
  np.testing.assert_allclose(g_at, g_full, atol=1e-6)
  assert abs(float(value_and_grad(k)[0]) - float(full)) > 1e-3


@pytest.mark.parametrize("top_m", [1, 3, 6])
def test_at_m_matches_numpy_with_padding_and_positives(top_m):
  """Dense relevance (every candidate a gain): NDCG@M with soft ranks over every
  candidate, as the numpy reference writes it, with padded rows and columns."""
  sim, pos, where, relevance, _ = make_batch(3, n_img=4, captions_per_image=2, pad_img=1, pad_txt=2)
  got = losses.smooth_ndcg(
    jnp.asarray(sim), jnp.asarray(relevance), positives=pos, where=where, temperature=0.1,
    top_m=top_m,
  )  # fmt: skip
  want = ref.smooth_ndcg(sim, relevance, where, 0.1, positives=pos, top_m=top_m)
  assert float(got) == pytest.approx(want, abs=1e-5)


def test_ranks_of_chosen_items_are_their_ranks_among_all_with_the_same_gradient():
  rng = np.random.default_rng(7)
  scores = jnp.asarray(rng.uniform(-1, 1, 9), jnp.float32)
  where = jnp.asarray(rng.uniform(size=9) > 0.2)
  index = jnp.array([4, 0, 7])
  g = jnp.asarray(rng.normal(size=3), jnp.float32)
  full = lambda s: jnp.sum(g * losses.approx_ranks(s, temperature=0.3, where=where)[index])
  chosen = lambda s: jnp.sum(
    g * losses.approx_ranks_of(s[index], s, temperature=0.3, where=where, chosen_where=where[index])
  )
  assert float(chosen(scores)) == pytest.approx(float(full(scores)), rel=1e-6)
  np.testing.assert_allclose(jax.grad(chosen)(scores), jax.grad(full)(scores), atol=1e-5)
