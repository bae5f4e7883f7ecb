"""Isotonic fit: a hand-computed PAV case, monotone knots, scikit-learn parity."""

import numpy as np
import pytest

from jitr.relevance.isotonic import isotonic_fit, pool_adjacent_violators


def test_pav_by_hand():
  # 3 > 2: pool (3, 2) -> 2.5; then 2.5 > 2: pool (3, 2, 2) -> 7/3; 5 stays
  means, sizes = pool_adjacent_violators(np.array([1.0, 3.0, 2.0, 2.0, 5.0]), np.ones(5))
  np.testing.assert_allclose(means, [1.0, 7 / 3, 5.0])
  np.testing.assert_array_equal(sizes, [1, 3, 1])
  # weights: (3 * 1 + 1 * 3) / 4 = 1.5
  means, sizes = pool_adjacent_violators(np.array([3.0, 1.0]), np.array([1.0, 3.0]))
  np.testing.assert_allclose(means, [1.5])


def test_fit_by_hand_with_tied_inputs():
  # x = 0.2 twice (y 0 and 1 -> 0.5), then 0.4 -> 0.2 violates: pool (0.5, 0.5, 0.2) -> 0.4
  x = np.array([0.2, 0.2, 0.4, 0.6])
  y = np.array([0.0, 1.0, 0.2, 0.9])
  kx, ky = isotonic_fit(x, y)
  np.testing.assert_allclose(kx, [0.2, 0.4, 0.6])
  np.testing.assert_allclose(ky, [0.4, 0.4, 0.9])


@pytest.mark.parametrize("seed", [0, 1])
def test_matches_scikit_learn(seed):
  sklearn_isotonic = pytest.importorskip("sklearn.isotonic")
  rng = np.random.default_rng(seed)
  x = np.round(rng.random(2000), 2)  # many ties
  y = (rng.random(2000) < x**2).astype(float)
  w = rng.uniform(0.5, 2.0, 2000)
  kx, ky = isotonic_fit(x, y, w)
  ref = sklearn_isotonic.IsotonicRegression(out_of_bounds="clip").fit(x, y, sample_weight=w)
  np.testing.assert_allclose(kx, ref.X_thresholds_)
  np.testing.assert_allclose(ky, ref.y_thresholds_, atol=1e-12)
  grid = np.linspace(-0.1, 1.1, 501)
  np.testing.assert_allclose(np.interp(grid, kx, ky), ref.predict(grid), atol=1e-12)
  assert np.all(np.diff(kx) > 0) and np.all(np.diff(ky) >= 0)


def test_bad_input():
  with pytest.raises(ValueError, match="one non-empty length"):
    isotonic_fit(np.array([0.1, 0.2]), np.array([0.3]))
  with pytest.raises(ValueError, match="finite"):
    isotonic_fit(np.array([0.1, np.nan]), np.array([0.3, 0.4]))
