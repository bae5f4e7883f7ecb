"""A loss is written once: a per-query formula through ``query_rows.QueryLoss`` gives the
core on query rows and the whole-matrix loss (both directions, direction weights) equal to a
hand-written loop, with the defaults of its signature; its declared ranges refuse a call's
and a config term's out-of-range hyper-parameter in one line."""

import ast
import inspect
import pathlib

import jax.numpy as jnp
import numpy as np
import pytest

import jitr.losses
from jitr import losses
from jitr.losses import checks
from jitr.losses import query_rows as qr
from jitr.losses.composite import check_terms


def gap_query(query, *, margin: float = 0.5, power: float = 2.0, alpha: float = 0.25):
  """``margin + Σ_n g_n·s_n^power − mean_p s_p`` over valid negatives n, valid positives p;
  counts when the query has a valid positive."""
  del alpha  # weighs the directions
  neg = query.where & ~query.positives
  pos = query.where & query.positives
  n_pos = jnp.sum(pos)
  negatives = jnp.sum(jnp.where(neg, query.graded * query.sim**power, 0.0))
  positives = jnp.sum(jnp.where(pos, query.sim, 0.0)) / jnp.maximum(n_pos, 1)
  return margin + negatives - positives, n_pos > 0


GAP = qr.QueryLoss(
  gap_query,
  ranges={"margin": checks.NONNEGATIVE, "power": checks.POSITIVE, "alpha": checks.UNIT_INTERVAL},
  graded="gains",
  direction_weights=lambda hyper: (hyper["alpha"], 1.0 - hyper["alpha"]),
)
gap = GAP.function("The toy gap loss of both directions.")

SIM = np.array([[0.9, 0.2, 0.4, 0.7], [0.1, 0.8, 0.3, 0.5], [0.6, 0.5, 0.2, 0.9]], np.float32)
GAINS = np.array([[1.0, 0.5, 0.2, 0.3], [0.4, 1.0, 0.6, 0.1], [0.7, 0.9, 1.0, 0.8]], np.float32)
POS = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], bool)
WHERE = np.array([[1, 1, 1, 0], [1, 1, 1, 0], [0, 0, 0, 0]], bool)  # caption 3, image 2 padded


def _by_hand(sim, gains, pos, where, margin, power):
  """Per-query values and counts of the rows of ``sim``, one query at a time."""
  values, counts = [], []
  for s, g, p, w in zip(sim, gains, pos, where):
    neg_terms = [g[c] * s[c] ** power for c in range(len(s)) if w[c] and not p[c]]
    pos_terms = [s[c] for c in range(len(s)) if w[c] and p[c]]
    values.append(margin + sum(neg_terms) - sum(pos_terms) / max(len(pos_terms), 1))
    counts.append(float(len(pos_terms) > 0))
  return np.array(values), np.array(counts)


def _both_by_hand(margin=0.5, power=2.0, alpha=0.25):
  i2t = _by_hand(SIM, GAINS, POS, WHERE, margin, power)
  t2i = _by_hand(SIM.T, GAINS.T, POS.T, WHERE.T, margin, power)
  return i2t, t2i, alpha


def test_defaults_come_from_the_formula_signature_once():
  assert GAP.defaults == {"margin": 0.5, "power": 2.0, "alpha": 0.25}
  params = inspect.signature(gap).parameters
  assert list(params) == ["sim", "gains", "positives", "where", "margin", "power", "alpha"] + [
    "reduction"
  ]
  assert (params["margin"].default, params["power"].default, params["reduction"].default) == (
    0.5,
    2.0,
    "mean",
  )
  core = inspect.signature(GAP.per_query).parameters
  assert list(core) == ["rows", "key", "margin", "power", "alpha"]
  assert gap.__name__ == "gap" and gap.__doc__ == "The toy gap loss of both directions."


@pytest.mark.parametrize("hyper", [{}, {"margin": 0.1, "power": 1.0, "alpha": 0.6}])
def test_matrix_and_both_ways_forms_equal_a_hand_written_loop(hyper):
  (l_i, w_i), (l_t, w_t), alpha = _both_by_hand(**hyper)
  args = (jnp.asarray(SIM), jnp.asarray(GAINS))
  masks = dict(positives=jnp.asarray(POS), where=jnp.asarray(WHERE))
  none = gap(*args, **masks, reduction="none", **hyper)
  np.testing.assert_allclose(none.image_to_text, l_i, rtol=1e-6)
  np.testing.assert_allclose(none.text_to_image, l_t, rtol=1e-6)
  np.testing.assert_array_equal(none.image_weight, w_i)
  np.testing.assert_array_equal(none.text_weight, w_t)
  np.testing.assert_array_equal(w_i, [1.0, 1.0, 0.0])  # the padded image does not count
  mean = alpha * np.sum(l_i * w_i) / w_i.sum() + (1 - alpha) * np.sum(l_t * w_t) / w_t.sum()
  total = alpha * np.sum(l_i * w_i) + (1 - alpha) * np.sum(l_t * w_t)
  assert float(gap(*args, **masks, **hyper)) == pytest.approx(mean, rel=1e-6)
  assert float(gap(*args, **masks, reduction="sum", **hyper)) == pytest.approx(total, rel=1e-6)
  # The core on a block of rows (two of the caption queries): the direction weight folded in.
  rows = qr.QueryRows(
    jnp.asarray(SIM.T[1:3]),
    jnp.asarray(POS.T[1:3]),
    jnp.asarray(WHERE.T[1:3]),
    jnp.asarray(GAINS.T[1:3]),
    jnp.arange(1, 3),
    qr.TEXT_TO_IMAGE,
  )
  loss, weight = GAP.per_query(rows, **hyper)
  np.testing.assert_allclose(loss, (1 - alpha) * l_t[1:3], rtol=1e-6)
  np.testing.assert_array_equal(weight, w_t[1:3] > 0)


def test_padding_never_reaches_the_formula():
  sim = jnp.asarray(SIM).at[:, 3].set(jnp.nan).at[2, :].set(jnp.inf)
  gains = jnp.asarray(GAINS).at[:, 3].set(jnp.nan)
  masks = dict(positives=jnp.asarray(POS), where=jnp.asarray(WHERE))
  clean = gap(jnp.asarray(SIM), jnp.asarray(GAINS), **masks)
  assert float(gap(sim, gains, **masks)) == pytest.approx(float(clean), rel=1e-6)


def test_a_call_out_of_range_is_refused_in_one_line():
  with pytest.raises(ValueError) as err:
    gap(jnp.asarray(SIM), jnp.asarray(GAINS), positives=jnp.asarray(POS), power=0)
  assert str(err.value) == "power: expected a finite number > 0, got 0"
  with pytest.raises(ValueError) as err:
    GAP.per_query(qr.directions(jnp.asarray(SIM), jnp.asarray(POS), jnp.ones((3, 4), bool))[0])
  assert str(err.value) == "gap: needs a gains matrix (rows.graded is None)"
  with pytest.raises(TypeError, match=r"^gap\(\) got an unexpected keyword argument 'temp'"):
    gap(jnp.asarray(SIM), jnp.asarray(GAINS), positives=jnp.asarray(POS), temp=1.0)


def test_ranges_must_name_the_formula_hyper_parameters():
  with pytest.raises(TypeError, match="ranges name"):
    qr.QueryLoss(gap_query, ranges={"margin": checks.NONNEGATIVE})


@pytest.mark.parametrize(
  "terms,message",
  [
    (
      {"gap": {"power": 0}},
      "config.loss.gap.power: expected a finite number > 0, got 0",
    ),
    (
      {"gap": {"alpha": 1.5}},
      "config.loss.gap.alpha: expected a number in [0, 1], got 1.5",
    ),
    (
      {"gap": {"margin": "0.5"}},
      "config.loss.gap.margin: expected a finite number >= 0, got '0.5' (str)",
    ),
  ],
)
def test_a_config_field_out_of_its_declared_range_is_refused(terms, message):
  with pytest.raises(ValueError) as err:
    GAP.check_config("loss.gap", terms["gap"])
  assert str(err.value) == message


@pytest.mark.parametrize(
  "terms,message",
  [
    (
      {"triplet": {"margin": -0.2}},
      "config.loss.triplet.margin: expected a finite number >= 0, got -0.2",
    ),
    (
      {"warmup": {"loss": "triplet", "mining": "min"}},
      "config.loss.warmup.mining: expected one of ['max', 'sum'], got 'min'",
    ),
    (
      {"cmal2r": {"loss": "adaptive_listwise", "alpha": 2}},
      "config.loss.cmal2r.alpha: expected a number in [0, 1], got 2",
    ),
    (
      {"lseh": {"loss": "semantic_hard_negatives", "semantic_weight": float("inf")}},
      "config.loss.lseh.semantic_weight: expected a finite number, got inf",
    ),
    (
      {"smooth_ndcg": {"block_size": 0}},
      "config.loss.smooth_ndcg.block_size: expected an int >= 1, got 0",
    ),
    (
      {"smooth_ndcg": {"weight": -1.0}},
      "config.loss.smooth_ndcg.weight: expected a finite number >= 0, got -1.0",
    ),
    (
      {"smooth_ndcg": {"margin": 0.2}},
      "config.loss.smooth_ndcg.margin: not a setting of smooth_ndcg; expected one of "
      "['block_size', 'from_epoch', 'input', 'loss', 'reduction', 'temperature', "
      "'top_m', 'until_epoch', 'weight', 'window']",
    ),
    (
      {"smooth_ndcg": {"top_m": -8}},
      "config.loss.smooth_ndcg.top_m: expected an int >= 0, got -8",
    ),
    (
      {"sam": {"loss": "semantic_margin_triplet", "max_margin": None, "keep_triplet": 0}},
      "config.loss.sam.keep_triplet: expected True or False, got 0 (int)",
    ),
  ],
)
def test_each_term_is_checked_by_the_loss_it_names(terms, message):
  with pytest.raises(ValueError) as err:
    check_terms(terms)
  assert str(err.value) == message


def test_a_term_that_starts_too_late_is_refused():
  check_terms({"triplet": {"from_epoch": 1}}, num_epochs=2)
  with pytest.raises(ValueError) as err:
    check_terms({"triplet": {"from_epoch": 2}}, num_epochs=2)
  assert str(err.value) == (
    "config.loss.triplet.from_epoch: expected less than config.num_epochs (2), got 2: the "
    "term would never train; raise num_epochs or lower from_epoch"
  )


def test_every_registered_loss_declares_the_range_of_each_hyper_parameter():
  for name, spec in losses.LOSSES.items():
    assert spec.name == name and spec.fn.__name__ == name
    assert set(spec.ranges) == set(qr.keyword_defaults(spec.formula)), name
    params = inspect.signature(spec.fn).parameters
    for hyper, default in spec.defaults.items():
      assert params[hyper].default == default and params[hyper].kind is params[hyper].KEYWORD_ONLY


def test_no_function_of_the_losses_takes_more_than_eight_parameters():
  root = pathlib.Path(jitr.losses.__file__).parent
  for path in root.glob("*.py"):
    for node in ast.walk(ast.parse(path.read_text())):
      if isinstance(node, ast.FunctionDef):
        a = node.args
        count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
        count += (a.vararg is not None) + (a.kwarg is not None)
        assert count <= 8, (path.name, node.name, count)
