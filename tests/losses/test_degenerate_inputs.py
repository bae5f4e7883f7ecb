"""Degenerate inputs of the losses: value and gradient agree, and a loss stays in its range.

* A NaN / +-inf in a valid entry of ``sim`` or of the graded matrix (CIDEr-D scores, relevance,
  LSEH's S) makes the loss NaN *and* the gradient with respect to ``sim`` NaN (before, the
  gradient of SAM and of every loss with a NaN in ``sim`` stayed finite: a NaN loss with a
  usable-looking gradient). Finite inputs keep their value and gradient bit for bit.
* Relevance below 0 counts as 0: ``smooth_ndcg`` stays <= 1 and equals its value on the
  relevance clipped at 0, under ``jit`` too (no host sync: a traced matrix is not checked).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses
from jitr.losses import checks
from tests.losses.test_nonfinite import _VALUE_AND_GRAD, GRADED, LOSS_FNS, _inputs

NAN, INF = float("nan"), float("inf")


def _value_and_sim_grad(name, sim, graded, where, positives):
  """The loss ``name`` and its gradient with respect to ``sim`` (jitted once per loss, the
  same compiled programs as test_nonfinite.py's)."""
  value, grad = _VALUE_AND_GRAD[name](sim, graded, where, positives)
  return float(value), np.asarray(grad)


@pytest.mark.parametrize("bad", [NAN, INF, -INF])
def test_sam_with_a_nonfinite_cider_score_has_a_nan_value_and_a_nan_gradient(bad):
  sim, metric, where, pos = _inputs()
  fn = "sam_hard"
  value, grad = _value_and_sim_grad(fn, sim, metric, where, pos)
  assert np.isfinite(value) and np.isfinite(grad).all()
  for i, j in ((0, 0), (0, 1), (1, 2)):  # a positive's φ, a negative's φ
    value, grad = _value_and_sim_grad(fn, sim, metric.at[i, j].set(bad), where, pos)
    assert np.isnan(value), (i, j)
    assert np.isnan(grad).any(), (i, j, grad)
    assert not np.isnan(grad[2]).any() and not np.isnan(grad[:, 3]).any()  # padding: clean


@pytest.mark.parametrize(
  ("name", "matrix"),
  [(name, "sim") for name in sorted(LOSS_FNS)] + [(name, "graded") for name in GRADED],
)
def test_every_loss_has_a_nan_gradient_when_its_value_is_nan(name, matrix):
  sim, graded, where, pos = _inputs()
  fn = name
  clean_value, clean_grad = _value_and_sim_grad(fn, sim, graded, where, pos)
  for i, j in ((0, 0), (0, 1), (1, 2)):
    if matrix == "sim":
      value, grad = _value_and_sim_grad(fn, sim.at[i, j].set(NAN), graded, where, pos)
    else:
      value, grad = _value_and_sim_grad(fn, sim, graded.at[i, j].set(NAN), where, pos)
    assert np.isnan(value) and np.isnan(grad).any(), (i, j, value, grad)
  assert np.isfinite(clean_value) and np.isfinite(clean_grad).all()


@pytest.mark.parametrize("name", sorted(LOSS_FNS))
def test_finite_inputs_keep_their_value_and_gradient_exactly(name):
  """The NaN-propagating term adds exactly 0 to a finite loss and its gradient, also for
  huge scores (each ``0 · sim_ij`` is 0 before the row is summed)."""
  sim, graded, where, pos = _inputs()
  big = sim.at[0, 1].set(1e30).at[1, 0].set(-1e30).at[1, 1].set(1e30)
  plain_fn = jax.jit(jax.value_and_grad(_without_propagation(LOSS_FNS[name])))
  for s in (sim, big):
    value, grad = _value_and_sim_grad(name, s, graded, where, pos)
    assert np.isfinite(value) and np.isfinite(grad).all(), (value, grad)
    plain = plain_fn(s, graded, where, pos)
    np.testing.assert_array_equal(value, np.float32(plain[0]))
    np.testing.assert_array_equal(grad, np.asarray(plain[1]))


def _without_propagation(fn):
  """``fn`` with the NaN-propagating term of :mod:`jitr.losses.checks` left out."""

  def plain(*args):
    real = checks.propagate_nonfinite
    checks.propagate_nonfinite = lambda loss, where, sim, *matrices: loss
    try:
      return fn(*args)
    finally:
      checks.propagate_nonfinite = real

  return plain


def test_smooth_ndcg_with_negative_relevance_stays_at_most_1_and_equals_relevance_0():
  sim = jnp.array([[0.1, 0.9, 0.5], [0.8, 0.2, 0.3]])
  relevance = jnp.array([[0.2, -1.0, 1.0], [-1.0, 0.0, 0.7]])
  # One compiled program: per-direction losses, the mean, and its gradient w.r.t. ``sim``.
  loss = jax.jit(
    lambda s, r: (
      losses.smooth_ndcg(s, r, reduction="none"),
      jax.value_and_grad(losses.smooth_ndcg)(s, r),
    )
  )
  per_query, (total, grad) = loss(sim, relevance)
  clipped_per_query, (clipped_total, _) = loss(sim, jnp.maximum(relevance, 0.0))
  for got, want in zip(jax.tree.leaves(per_query), jax.tree.leaves(clipped_per_query)):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  assert 0.0 <= float(total) <= 1.0
  assert float(total) == float(clipped_total)
  assert np.isfinite(np.asarray(grad)).all()


def test_exact_ndcg_of_negative_relevance_stays_in_0_1():
  scores, relevance = jnp.array([0.9, 0.5, 0.1]), jnp.array([-2.0, 0.0, 1.0])
  ndcg = jax.jit(losses.ndcg)  # one program for the three relevance vectors
  value = float(ndcg(scores, relevance))
  assert 0.0 <= value <= 1.0
  assert value == float(ndcg(scores, jnp.maximum(relevance, 0.0)))
  assert np.isnan(float(ndcg(scores, relevance.at[1].set(NAN))))  # NaN stays NaN
