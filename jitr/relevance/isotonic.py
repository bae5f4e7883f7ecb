"""Isotonic regression (pool adjacent violators) and its knot table, for calibration.

:func:`isotonic_fit` fits the non-decreasing step function ``f`` minimising
``Σ_p w_p (y_p − f(x_p))²`` (equal ``x`` pooled first, their weighted mean of ``y``),
and returns it as knots ``(x_k, y_k)``: both ends of every constant block. The
map between knots is linear interpolation, as scikit-learn's
``IsotonicRegression.predict`` (its ``X_thresholds_`` / ``y_thresholds_``). The
knots are what :mod:`jitr.losses.calibration` (``isotonic:TABLE``) applies.

>>> fx, fy = isotonic_fit(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.0, 0.6, 0.2, 1.0]))
>>> fx.tolist(), fy.round(4).tolist()  # 0.6 and 0.2 pool into 0.4
([0.1, 0.2, 0.3, 0.4], [0.0, 0.4, 0.4, 1.0])
"""

from __future__ import annotations

import numpy as np


def pool_adjacent_violators(y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Blocks of the non-decreasing weighted least-squares fit of the sequence ``y``.

  Returns ``(means, sizes)``: the fitted value of each block (strictly increasing)
  and how many consecutive entries it covers.

  >>> m, s = pool_adjacent_violators(np.array([1.0, 3.0, 2.0, 2.0, 5.0]), np.ones(5))
  >>> m.round(4).tolist(), s.tolist()
  ([1.0, 2.3333, 5.0], [1, 3, 1])
  """
  sums: list[float] = []
  weights: list[float] = []
  sizes: list[int] = []
  for value, weight in zip(np.asarray(y, np.float64), np.asarray(w, np.float64)):
    sums.append(value * weight)
    weights.append(weight)
    sizes.append(1)
    while len(sums) > 1 and sums[-2] / weights[-2] >= sums[-1] / weights[-1]:
      s, wt, n = sums.pop(), weights.pop(), sizes.pop()
      sums[-1] += s
      weights[-1] += wt
      sizes[-1] += n
  return np.asarray(sums) / np.asarray(weights), np.asarray(sizes, np.int64)


def isotonic_fit(
  x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
  """Knots ``(x_k, y_k)`` of the non-decreasing isotonic fit of ``y`` on ``x``.

  Args:
    x: ``[P]`` inputs (e.g. an estimator's relevance of judged pairs).
    y: ``[P]`` targets (e.g. the fraction of people who said yes).
    weights: optional ``[P]`` positive weights (default 1).

  Returns:
    ``x_k`` strictly increasing (the first and last distinct ``x`` of every block)
    and ``y_k`` non-decreasing (the block's weighted mean), float64.
  """
  x = np.asarray(x, np.float64).ravel()
  y = np.asarray(y, np.float64).ravel()
  w = np.ones_like(x) if weights is None else np.asarray(weights, np.float64).ravel()
  if not (x.shape == y.shape == w.shape) or x.size == 0:
    raise ValueError(f"isotonic_fit: x, y, weights must be one non-empty length, got "
                     f"{x.shape}, {y.shape}, {w.shape}")  # fmt: skip
  if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and np.all(w > 0)):
    raise ValueError("isotonic_fit: x and y must be finite and weights positive")
  order = np.argsort(x, kind="stable")
  x, y, w = x[order], y[order], w[order]
  ux, start = np.unique(x, return_index=True)  # equal x pooled: weighted mean of y
  uw = np.add.reduceat(w, start)
  uy = np.add.reduceat(w * y, start) / uw
  means, sizes = pool_adjacent_violators(uy, uw)
  ends = np.cumsum(sizes)
  firsts, lasts = ux[ends - sizes], ux[ends - 1]
  knots_x = np.stack([firsts, lasts], axis=1).ravel()
  knots_y = np.repeat(means, 2)
  keep = np.ones(knots_x.size, bool)
  keep[1::2] = lasts != firsts  # a one-point block has one knot
  return knots_x[keep], knots_y[keep]
