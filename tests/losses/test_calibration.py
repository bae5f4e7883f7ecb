"""Calibration transforms: hand-computed cases, monotonicity, positives 1, range, the objective."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses
from jitr.losses import calibration, query_rows
from jitr.losses.calibration import (
  CalibrationError,
  calibrate,
  load_table,
  parse_calibration,
  shipped_tables,
)
from tests.losses.conftest import make_batch

ROW = np.array([[1.0, 0.6, 0.8, 0.7, 0.2]], np.float32)
POS = np.array([[True, False, False, False, False]])


def _cal(spec, rows=ROW, positives=POS, where=None):
  return np.asarray(calibrate(jnp.asarray(rows), spec=spec, positives=positives, where=where))


@pytest.fixture
def toy_table(tmp_path):
  path = tmp_path / "toy.json"
  path.write_text(json.dumps({"x": [0.5, 0.7, 0.9], "y": [0.0, 0.2, 1.0], "note": "toy"}))
  return str(path)


def test_minmax_by_hand():
  # min 0.2, max 1 (the positive): (r - 0.2) / 0.8
  np.testing.assert_allclose(_cal("minmax"), [[1.0, 0.5, 0.75, 0.625, 0.0]], atol=1e-6)
  # padded entries are left out of min/max and come out 0: min 0.6 -> (r - 0.6) / 0.4
  where = np.array([[True, True, True, True, False]])
  np.testing.assert_allclose(_cal("minmax", where=where), [[1.0, 0.0, 0.5, 0.25, 0.0]], atol=1e-6)
  # a query whose valid entries are all equal (no positive): 0
  flat = np.full((1, 4), 0.6, np.float32)
  np.testing.assert_array_equal(_cal("minmax", flat, np.zeros((1, 4), bool)), np.zeros((1, 4)))


def test_power_floor_and_chains_by_hand():
  np.testing.assert_allclose(_cal("power:2"), [[1.0, 0.36, 0.64, 0.49, 0.04]], atol=1e-6)
  np.testing.assert_allclose(_cal("power:0.5")[0, 4], np.sqrt(0.2), atol=1e-6)
  np.testing.assert_allclose(_cal("floor:0.7"), [[1.0, 0.0, 0.8, 0.7, 0.0]], atol=1e-6)
  # threshold 0.6: (r − 0.6)/0.4 above it, 0 at or below
  np.testing.assert_allclose(_cal("threshold:0.6"), [[1.0, 0.0, 0.5, 0.25, 0.0]], atol=1e-6)
  # left to right: minmax then power 2, then the other way round
  np.testing.assert_allclose(
    _cal("minmax,power:2"), [[1.0, 0.25, 0.5625, 0.390625, 0.0]], atol=1e-6
  )
  # power first: 0.36 0.64 0.49 0.04 -> (r - 0.04) / 0.96
  np.testing.assert_allclose(
    _cal(["power:2", "minmax"]), [[1.0, 0.32 / 0.96, 0.6 / 0.96, 0.45 / 0.96, 0.0]], atol=1e-6
  )
  for identity in (None, "", "none", []):
    np.testing.assert_allclose(_cal(identity), ROW, atol=0)


def test_isotonic_interpolates_the_table_and_is_flat_beyond_its_ends(toy_table):
  # 0.6 -> 0.1, 0.8 -> 0.6, 0.7 -> 0.2, 0.2 -> 0 (below x_0); the positive stays 1
  np.testing.assert_allclose(_cal(f"isotonic:{toy_table}"), [[1.0, 0.1, 0.6, 0.2, 0.0]], atol=1e-6)
  above = np.array([[0.95, 1.0]], np.float32)
  np.testing.assert_allclose(_cal(f"isotonic:{toy_table}", above, None), [[1.0, 1.0]], atol=1e-6)
  assert load_table(toy_table).meta == {"note": "toy"}


def _write_table(path, y):
  path.write_text(json.dumps({"x": [0.5, 0.7, 0.9], "y": y}))


def test_a_rewritten_table_file_is_read_again(tmp_path):
  path = tmp_path / "toy.json"
  _write_table(path, [0.0, 0.2, 1.0])
  first = parse_calibration(f"isotonic:{path}")
  np.testing.assert_allclose(_cal(first)[0, 3], 0.2, atol=1e-6)  # 0.7 -> y_1
  _write_table(path, [0.0, 0.4, 1.0])
  np.testing.assert_allclose(_cal(f"isotonic:{path}")[0, 3], 0.4, atol=1e-6)
  assert load_table(str(path)).y == (0.0, 0.4, 1.0)
  np.testing.assert_allclose(_cal(first)[0, 3], 0.2, atol=1e-6)  # a parsed chain keeps its knots


def test_a_rewritten_named_table_is_read_again(tmp_path, monkeypatch):
  monkeypatch.setattr(calibration, "TABLES_DIR", str(tmp_path))
  _write_table(tmp_path / "toy.json", [0.0, 0.2, 1.0])
  assert shipped_tables() == ["toy"] and load_table("toy").y == (0.0, 0.2, 1.0)
  _write_table(tmp_path / "toy.json", [0.0, 0.3, 1.0])
  np.testing.assert_allclose(_cal("isotonic:toy")[0, 3], 0.3, atol=1e-6)
  objective = losses.objective(
    {"smooth_ndcg": {"temperature": 0.1}}, calibration={"relevance": "isotonic:toy"}
  )
  assert objective.terms["smooth_ndcg"].calibration.steps[0][1].y == (0.0, 0.3, 1.0)


@pytest.mark.parametrize(
  "spec",
  [
    "minmax",
    "power:3",
    "power:0.3",
    "floor:0.5",
    "threshold:0.5",
    "minmax,floor:0.3,power:2",
    "TOY",
    "range:0.5:0.7",
  ],
)
def test_monotone_positives_one_range_and_padding(spec, toy_table):
  spec = spec.replace("TOY", f"isotonic:{toy_table}")
  _, pos, where, relevance, _ = make_batch(3, n_img=5, captions_per_image=3, pad_txt=2)
  out = _cal(spec, relevance, pos, where)
  assert out.shape == relevance.shape
  assert np.all((out >= 0) & (out <= 1))
  assert np.all(out[pos] == 1.0)
  assert np.all(out[~where] == 0.0)
  for q in range(relevance.shape[0]):  # within a query: r_a <= r_b -> out_a <= out_b
    valid = where[q]
    r, o = relevance[q, valid], out[q, valid]
    order = np.argsort(r, kind="stable")
    assert np.all(np.diff(o[order]) >= -1e-7), (spec, q)


def test_shipped_crowdflower_sentence_table():
  assert "crowdflower-sentence" in shipped_tables()
  table = load_table("crowdflower-sentence")
  assert table.meta["estimator"] == "sentence" and table.meta["pairs"] > 40_000
  x = np.asarray(table.x)
  assert np.all(np.diff(x) > 0) and np.all(np.diff(table.y) >= 0)
  # an unrelated caption (RSC ~ 0.6) is judged a match by almost nobody
  assert float(np.interp(0.6, table.x, table.y)) < 0.1


@pytest.mark.parametrize(
  "spec, message",
  [
    ("sharpen", "unknown transform 'sharpen'"),
    ("power", "expected power:NUMBER with NUMBER in (0.0"),
    ("power:-1", "expected power:NUMBER"),
    ("floor:1.5", "expected floor:NUMBER with NUMBER in [0.0, 1.0]"),
    ("threshold:1", "expected threshold:NUMBER with NUMBER in [0.0, 0.999]"),
    ("minmax:3", "minmax takes no argument"),
    ("isotonic", "expected isotonic:TABLE"),
    ("range:0.7:0.5", "expected range:LO:HI with 0 <= LO < HI <= 1"),
    ("range:0.5", "expected range:LO:HI"),
    ("isotonic:no-such-table", "no-such-table.json not found"),
  ],
)
def test_bad_specs_name_what_was_expected(spec, message):
  with pytest.raises(CalibrationError, match=None) as err:
    parse_calibration(spec)
  assert message in str(err.value)


def test_bad_table_files_are_rejected(tmp_path):
  for name, body, message in [
    ("dec.json", {"x": [0.1, 0.2], "y": [0.5, 0.4]}, "'y' must be non-decreasing"),
    ("dup.json", {"x": [0.1, 0.1], "y": [0.4, 0.5]}, "'x' must be strictly increasing"),
    ("out.json", {"x": [0.1, 1.2], "y": [0.4, 0.5]}, "must lie in [0, 1]"),
    ("keys.json", {"knots": []}, "expected a JSON object with 'x' and 'y'"),
  ]:
    path = tmp_path / name
    path.write_text(json.dumps(body))
    with pytest.raises(CalibrationError) as err:
      parse_calibration(f"isotonic:{path}")
    assert message in str(err.value) and str(path) in str(err.value)


def _rows(sim, pos, where, graded):
  return query_rows.directions(jnp.asarray(sim), jnp.asarray(pos), jnp.asarray(where), graded)


def test_objective_calibrates_each_direction_per_query():
  """minmax on image queries is per row, on caption queries per column."""
  sim, pos, where, relevance, _ = make_batch(5, n_img=4, captions_per_image=2, pad_txt=1)
  terms = {"smooth_ndcg": {"weight": 1.0, "temperature": 0.1}}
  calibrated = losses.objective(terms, calibration={"relevance": "minmax"})
  plain = losses.objective(terms)
  rows_i2t = calibrate(relevance, spec="minmax", positives=pos, where=where)
  rows_t2i = calibrate(relevance.T, spec="minmax", positives=pos.T, where=where.T)
  i2t, t2i = _rows(sim, pos, where, jnp.asarray(relevance))
  got = calibrated.partial_sums({"smooth_ndcg": (i2t, t2i)})["smooth_ndcg"]
  want = plain.partial_sums(
    {"smooth_ndcg": (i2t._replace(graded=rows_i2t), t2i._replace(graded=rows_t2i))}
  )["smooth_ndcg"]
  for a, b in zip(got, want):
    np.testing.assert_allclose(a, b, rtol=1e-6)
  # the whole-matrix call agrees with the split one, and calibration changes the loss
  total, _ = jax.jit(
    lambda s: calibrated(s, positives=pos, where=where, graded=jnp.asarray(relevance))
  )(jnp.asarray(sim))
  value, _ = calibrated.combine({"smooth_ndcg": got})
  np.testing.assert_allclose(total, value, rtol=1e-6)
  plain_total, _ = plain(jnp.asarray(sim), positives=pos, where=where, graded=relevance)
  assert abs(float(plain_total) - float(total)) > 1e-4


def test_objective_calibration_splits_over_query_blocks():
  """Two blocks of image queries (two devices) sum to the whole batch's partial sums."""
  sim, pos, where, relevance, _ = make_batch(6, n_img=6, captions_per_image=2)
  fn = losses.objective(
    {"smooth_ndcg": {"temperature": 0.1}}, calibration={"relevance": "minmax,power:2"}
  )

  def whole_and_blocks(sim):  # one compiled program instead of op-by-op dispatch
    i2t, t2i = _rows(sim, pos, where, jnp.asarray(relevance))
    whole = fn.partial_sums({"smooth_ndcg": (i2t, t2i)})["smooth_ndcg"]
    parts = []
    for s in (slice(0, 3), slice(3, 6)):
      block = i2t._replace(
        sim=i2t.sim[s], positives=i2t.positives[s], where=i2t.where[s], graded=i2t.graded[s],
        index=i2t.index[s],
      )  # fmt: skip
      parts.append(fn.partial_sums({"smooth_ndcg": (block, t2i)})["smooth_ndcg"].image_to_text)
    return whole.image_to_text, parts

  whole, parts = jax.jit(whole_and_blocks)(jnp.asarray(sim))
  np.testing.assert_allclose(parts[0] + parts[1], whole, rtol=1e-6)


def test_objective_calibration_errors_name_the_input():
  with pytest.raises(ValueError, match="calibration.relevance: calibration 'bad'"):
    losses.objective({"smooth_ndcg": {}}, calibration={"relevance": "bad"})
  with pytest.raises(ValueError, match="no objective term reads graded input 'relevance'"):
    losses.objective({"triplet": {}}, calibration={"relevance": "minmax"})
  with pytest.raises(ValueError, match="calibration applies to relevance in \\[0, 1\\] only"):
    losses.objective(
      {"semantic_margin_triplet": {"input": "cider"}}, calibration={"cider": "minmax"}
    )
  # an empty chain for an input nobody reads is fine (configs/default.py's default)
  losses.objective({"triplet": {}}, calibration={"relevance": ""})


def test_train_config_check_names_a_bad_calibration():
  pytest.importorskip("ml_collections")  # the train extra's: the run's config checks
  from configs import default
  from jitr.experiment.run_config import check_train_config

  config = default.get_config()
  check_train_config(config)  # the default: no calibration
  config.calibration.relevance = "minmax,power:2"
  check_train_config(config)
  config.calibration.relevance = "floor:2"
  with pytest.raises(ValueError, match=r"calibration.relevance: calibration floor:2: expected"):
    check_train_config(config)


def test_range_squeezes_the_values_and_keeps_positives():
  r = np.array([[1.0, 0.0, 0.5, 1.0]], np.float32)
  pos = np.array([[True, False, False, False]])
  out = np.asarray(calibrate(r, positives=pos, spec="range:0.5:0.7"))
  np.testing.assert_allclose(out, [[1.0, 0.5, 0.6, 0.7]], atol=1e-6)  # an unannotated 1 -> 0.7
  assert not parse_calibration("range:0.5:0.7").strict  # maps [0, 1] onto [lo, hi], not itself
