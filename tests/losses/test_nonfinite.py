"""NaN convention, hyper-parameter checks and empty inputs, the same for every loss.

* A NaN (or +-inf) in a valid entry of ``sim`` or of the graded matrix makes the
  loss NaN; a NaN in a padded entry (``where`` False) changes nothing, value or
  gradient.
* Bad hyper-parameters raise one ValueError naming the argument and the range.
* 0 queries or 0 candidates give a loss of 0 (no query counts).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jitr import losses

NAN = float("nan")

# name -> loss(sim, graded, where, positives); graded is ignored by the plain losses.
LOSS_FNS = {
  "triplet_max": lambda s, g, w, p: losses.triplet(s, positives=p, where=w),
  "triplet_sum": lambda s, g, w, p: losses.triplet(s, positives=p, where=w, mining="sum"),
  "smooth_ndcg": lambda s, g, w, p: losses.smooth_ndcg(s, g, positives=p, where=w),
  "adaptive_listwise": lambda s, g, w, p: losses.adaptive_listwise(s, positives=p, where=w),
  "sam_hard": lambda s, g, w, p: losses.semantic_margin_triplet(s, g, positives=p, where=w),
  "sam_soft": lambda s, g, w, p: losses.semantic_margin_triplet(
    s, g, positives=p, where=w, sampling="soft", keep_triplet=True
  ),
  "sam_random": lambda s, g, w, p: losses.semantic_margin_triplet(
    s, g, positives=p, where=w, sampling="random", key=jax.random.key(0)
  ),
  "lseh": lambda s, g, w, p: losses.semantic_hard_negatives(s, g, positives=p, where=w),
}
GRADED = ("smooth_ndcg", "sam_hard", "sam_soft", "sam_random", "lseh")

# One jitted value-and-gradient (w.r.t. ``sim``) per loss, shared by every test of this file and
# of test_degenerate_inputs.py: all [3, 4] cases reuse one compiled program per loss.
_VALUE_AND_GRAD = {name: jax.jit(jax.value_and_grad(fn)) for name, fn in LOSS_FNS.items()}


def _loss_value(name, sim, graded, where, positives):
  """The loss ``name`` as a float, through the shared jitted program."""
  return float(_VALUE_AND_GRAD[name](sim, graded, where, positives)[0])


def _inputs():
  rng = np.random.default_rng(0)
  sim = jnp.asarray(rng.normal(size=(3, 4)), jnp.float32)
  graded = jnp.asarray(rng.uniform(size=(3, 4)), jnp.float32)
  positives = jnp.asarray(np.eye(3, 4, dtype=bool))
  where = losses.pair_mask(jnp.array([1, 1, 0], bool), jnp.array([1, 1, 1, 0], bool))
  return sim, graded, where, positives


@pytest.mark.parametrize("name", sorted(LOSS_FNS))
@pytest.mark.parametrize("bad", [NAN, float("inf"), -float("inf")])
def test_nonfinite_valid_sim_entry_gives_nan(name, bad):
  sim, graded, where, pos = _inputs()
  assert np.isfinite(_loss_value(name, sim, graded, where, pos))
  for i, j in ((0, 0), (0, 1), (1, 2)):  # a positive, a negative of a counted query
    assert np.isnan(_loss_value(name, sim.at[i, j].set(bad), graded, where, pos)), (i, j)


@pytest.mark.parametrize("name", GRADED)
def test_nan_valid_graded_entry_gives_nan(name):
  sim, graded, where, pos = _inputs()
  for i, j in ((0, 1), (1, 2), (1, 0)):
    assert np.isnan(_loss_value(name, sim, graded.at[i, j].set(NAN), where, pos)), (i, j)


@pytest.mark.parametrize("name", sorted(LOSS_FNS))
def test_nan_in_padded_entries_changes_neither_value_nor_gradient(name):
  sim, graded, where, pos = _inputs()
  fn = _VALUE_AND_GRAD[name]
  dirty_sim = sim.at[2, :].set(NAN).at[:, 3].set(NAN)
  dirty_graded = graded.at[2, 1].set(NAN).at[0, 3].set(NAN)
  value, grad = fn(sim, graded, where, pos)
  dirty_value, dirty_grad = fn(dirty_sim, dirty_graded, where, pos)
  assert np.isfinite(float(dirty_value))
  np.testing.assert_allclose(float(dirty_value), float(value), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(dirty_grad), np.asarray(grad), rtol=1e-5, atol=1e-7)
  assert np.all(np.asarray(dirty_grad)[2] == 0) and np.all(np.asarray(dirty_grad)[:, 3] == 0)


SIM = jnp.zeros((2, 2))
BAD_HYPER = [
  (lambda: losses.smooth_ndcg(SIM, SIM, temperature=0.0), "temperature: expected a finite"),
  (lambda: losses.smooth_ndcg(SIM, SIM, temperature=-1.0), "temperature: expected a finite"),
  (lambda: losses.smooth_ndcg(SIM, SIM, temperature=NAN), "temperature: expected a finite"),
  (lambda: losses.smooth_ndcg(SIM, SIM, block_size=0), "block_size: expected an int >= 1"),
  (lambda: losses.smooth_ndcg(SIM, SIM, block_size=2.5), "block_size: expected an int >= 1"),
  (lambda: losses.smooth_ndcg(SIM, SIM, reduction="avg"), "reduction: expected one of"),
  (lambda: losses.approx_ranks(jnp.zeros(3), temperature=0.0), "temperature: expected a finite"),
  (lambda: losses.semantic_margin_triplet(SIM, SIM, temperature=0), "temperature: expected"),
  (lambda: losses.semantic_margin_triplet(SIM, SIM, sampling="hardest"), "sampling: expected"),
  (lambda: losses.semantic_margin_triplet(SIM, SIM, max_margin=NAN), "max_margin: expected"),
  (lambda: losses.semantic_margin_triplet(SIM, SIM, triplet_margin=NAN), "triplet_margin"),
  (lambda: losses.semantic_margin_triplet(SIM, SIM, reduction="max"), "reduction: expected"),
  (lambda: losses.adaptive_listwise(SIM, sharpness=0.0), "sharpness: expected a finite"),
  (lambda: losses.adaptive_listwise(SIM, sharpness=-0.5), "sharpness: expected a finite"),
  (lambda: losses.adaptive_listwise(SIM, alpha=1.5), r"alpha: expected a number in \[0, 1\]"),
  (lambda: losses.adaptive_listwise(SIM, alpha=NAN), r"alpha: expected a number in \[0, 1\]"),
  (lambda: losses.adaptive_listwise(SIM, reduction="none!"), "reduction: expected one of"),
  (lambda: losses.triplet(SIM, margin=NAN), "margin: expected a finite number"),
  (lambda: losses.triplet(SIM, margin=float("inf")), "margin: expected a finite number"),
  (lambda: losses.triplet(SIM, mining="hard"), "mining: expected one of"),
  (lambda: losses.triplet(SIM, reduction="avg"), "reduction: expected one of"),
  (lambda: losses.semantic_hard_negatives(SIM, SIM, margin=NAN), "margin: expected a finite"),
  (lambda: losses.semantic_hard_negatives(SIM, SIM, semantic_weight=NAN), "semantic_weight"),
  (lambda: losses.ndcg(jnp.zeros(3), jnp.zeros(3), top_k=0), "top_k: expected an int >= 1"),
  (
    lambda: losses.objective({"smooth_ndcg": {"temperature": 0.0}})(
      SIM, positives=jnp.eye(2, dtype=bool), graded=SIM
    ),
    "temperature: expected a finite number > 0",
  ),
  (
    lambda: losses.objective({"adaptive_listwise": {"alpha": 2.0}})(
      SIM, positives=jnp.eye(2, dtype=bool)
    ),
    "alpha: expected a number in",
  ),
]


@pytest.mark.parametrize("call,message", BAD_HYPER)
def test_bad_hyper_parameters_raise_one_clear_error(call, message):
  with pytest.raises(ValueError, match=message):
    call()


def test_traced_hyper_parameters_are_not_checked():
  sim, graded, where, pos = _inputs()

  def both(t, b):  # traced hyper-parameters, and the same as Python numbers (checked)
    traced = losses.smooth_ndcg(sim, graded, positives=pos, where=where, temperature=t)
    traced = traced + losses.adaptive_listwise(sim, positives=pos, where=where, sharpness=b)
    given = losses.smooth_ndcg(sim, graded, positives=pos, where=where, temperature=0.5)
    given = given + losses.adaptive_listwise(sim, positives=pos, where=where, sharpness=0.3)
    return traced, given

  traced, given = jax.jit(both)(0.5, 0.3)  # one compiled program for both
  np.testing.assert_allclose(float(traced), float(given), rtol=1e-5)


@pytest.mark.parametrize("name", sorted(LOSS_FNS))
@pytest.mark.parametrize("shape", [(0, 0), (2, 0), (0, 3)])
def test_empty_inputs_give_zero(name, shape):
  z = jnp.zeros(shape)
  value = _JITTED[name](z, z, None, jnp.zeros(shape, bool))
  assert float(value) == 0.0


# Property-based: one shape class (3 images x 4 captions) so each loss compiles once.
_value = st.one_of(st.sampled_from([1e30, -1e30, 0.0]), st.floats(-3, 3, allow_nan=False, width=32))
_case = st.tuples(
  st.lists(_value, min_size=12, max_size=12),
  st.lists(st.floats(0, 1, width=32), min_size=12, max_size=12),
  st.lists(st.booleans(), min_size=12, max_size=12),
  st.permutations(range(3)),
  st.permutations(range(4)),
)


def _case_arrays(case):
  flat_sim, flat_g, flat_pos, perm_i, perm_t = case
  sim = jnp.asarray(np.array(flat_sim, np.float32).reshape(3, 4))
  graded = jnp.asarray(np.array(flat_g, np.float32).reshape(3, 4))
  pos = np.array(flat_pos).reshape(3, 4)
  pos[0, 0] = True  # at least one counted query
  return sim, graded, jnp.asarray(pos), np.asarray(perm_i), np.asarray(perm_t)


_JITTED = {name: jax.jit(lambda s, g, w, p, fn=fn: fn(s, g, w, p)) for name, fn in LOSS_FNS.items()}
_TINY_TAU = {
  "smooth_ndcg": jax.jit(
    lambda s, g, w, p: losses.smooth_ndcg(s, g, positives=p, where=w, temperature=1e-6)
  ),
  "sam_tiny_tau": jax.jit(
    lambda s, g, w, p: losses.semantic_margin_triplet(s, g, positives=p, where=w, temperature=1e-6)
  ),
}


@pytest.mark.parametrize("name", sorted(set(LOSS_FNS) - {"sam_random"}))
@settings(max_examples=25, deadline=None)
@given(case=_case)
def test_property_finite_and_invariant_to_permutation_and_padding(name, case):
  sim, graded, pos, pi, pt = _case_arrays(case)
  where = jnp.ones((3, 4), bool)
  fn = _JITTED[name]  # for the padded [4, 5] case; [3, 4] goes through the shared program
  value = _loss_value(name, sim, graded, where, pos)
  assert np.isfinite(value)
  # SAM picks one negative: among tied scores, the first by index.
  if not name.startswith("sam") or len(set(np.asarray(sim).ravel().tolist())) == sim.size:
    s, g, p = (np.asarray(x)[pi][:, pt] for x in (sim, graded, pos))  # host-side: no dispatch
    moved = _loss_value(name, s, g, where, p)
    np.testing.assert_allclose(moved, value, rtol=1e-5, atol=1e-6)
  # Padding: a 4th image row and a 5th caption column full of NaN, masked out.
  pad_sim, pad_g = np.full((2, 4, 5), NAN, np.float32)
  pad_sim[:3, :4], pad_g[:3, :4] = sim, graded
  pad_pos = np.zeros((4, 5), bool)
  pad_pos[:3, :4], pad_pos[3, 4] = pos, True
  pad_where = losses.pair_mask(jnp.arange(4) < 3, jnp.arange(5) < 4)
  padded = float(fn(pad_sim, pad_g, pad_where, pad_pos))  # one more compile: shape (4, 5)
  np.testing.assert_allclose(padded, value, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(_TINY_TAU))
@settings(max_examples=25, deadline=None)
@given(case=_case)
def test_property_tiny_temperature_stays_finite(name, case):
  sim, graded, pos, _, _ = _case_arrays(case)
  value = _TINY_TAU[name](sim, graded, jnp.ones((3, 4), bool), pos)
  assert np.isfinite(float(value))


@pytest.mark.parametrize("name", sorted(losses.LOSSES))
def test_cores_ignore_padded_nan_however_rows_are_built(name):
  """The per-query cores (objective, per-device train step) clean padding themselves."""
  from jitr.losses.query_rows import QueryRows  # pylint: disable=g-import-not-at-top

  sim, graded, where, pos = _inputs()
  spec = losses.LOSSES[name]
  core = spec.per_query
  key = jax.random.key(0)
  dirty_sim = sim.at[2, :].set(NAN).at[:, 3].set(NAN)
  dirty_graded = graded.at[2, 0].set(NAN).at[1, 3].set(NAN)
  # And through the objective, with the graded matrix given separately.
  term = {name: {"sampling": "random"} if spec.needs_key else {}}
  loss_fn = losses.objective(term)

  @jax.jit  # both directions' cores and the objective in one program, for clean and dirty
  def run(s, g):
    rows = []
    for direction, (ds, dg, p, w) in enumerate(((s, g, pos, where), (s.T, g.T, pos.T, where.T))):
      index = jnp.arange(ds.shape[0])
      rows.append(core(QueryRows(ds, p, w, dg, index, direction), key=key))
    graded_in = None if spec.graded is None else {"relevance": g}
    return rows, loss_fn(s, positives=pos, where=where, graded=graded_in, key=key)[0]

  clean_rows, base = run(sim, graded)
  dirty_rows, total = run(dirty_sim, dirty_graded)
  for clean, dirty in zip(clean_rows, dirty_rows):
    counted = np.asarray(clean[1])
    np.testing.assert_array_equal(np.asarray(dirty[1]), counted)
    np.testing.assert_allclose(np.asarray(dirty[0])[counted], np.asarray(clean[0])[counted])
  assert np.isfinite(float(total))
  np.testing.assert_allclose(float(total), float(base), rtol=1e-6)
