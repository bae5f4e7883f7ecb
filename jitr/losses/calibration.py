"""Calibration of graded relevance: monotone maps applied per query before a loss reads it.

A calibration is a chain of transforms written ``"minmax,power:2"`` (applied left to
right; ``""`` or ``"none"``: the identity). Every transform acts on **query rows**
``r [Q, C]`` (each row: one query's relevance to its candidates) with the query's
annotated ``positives`` and valid entries ``where``:

* ``minmax`` -- per query, ``r' = (r - min_q) / (max_q - min_q)`` over the query's
  valid candidates, positives (1) included, so with a positive in the list it is
  ``(r - min_q) / (1 - min_q)``: the least relevant candidate gets 0. A query whose
  valid entries are all equal gets 0;
* ``power:p`` -- ``r' = r^p`` (``p > 0``; a temperature ``T`` is ``power:1/T``);
  ``p > 1`` pushes the weakly relevant towards 0;
* ``floor:t`` -- ``r' = r if r >= t else 0`` (``0 <= t <= 1``);
* ``threshold:t`` -- ``r' = max(0, (r - t) / (1 - t))`` (``0 <= t <= 0.999``): what lies at or
  below ``t`` gets no gain and the rest is stretched back to ``[0, 1]``. Relevance whose
  every value is above 0 (RSC's ``(1 + cos)/2``) then has a few nonzero gains a query, as
  Smooth-NDCG@M (``top_m``) needs to equal the loss over all candidates;
* ``range:lo:hi`` -- ``r' = lo + (hi - lo) r`` (``0 <= lo < hi <= 1``): the values squeezed
  into ``[lo, hi]``, positives still 1. The opposite of ``minmax``: it gives exact
  relevance the narrow, raised scale of the estimators (RSC, token coverage) to tell
  the scale's effect on training from the ranking's;
* ``isotonic:TABLE`` -- a monotone map fitted to human judgments
  (:mod:`jitr.relevance.isotonic`, ``jitr-relevance-calibrate``), applied by linear
  interpolation between its knots ``(x_k, y_k)`` and constant beyond the ends
  (``np.interp``). ``TABLE`` names a table shipped in ``jitr/losses/calibration_tables``
  (``crowdflower-sentence``: RSC -> fraction of CrowdFlower "yes") or is a path to a
  ``.json`` file with the same fields. The table is read when the chain is parsed
  (:func:`parse_calibration`) and its knots are carried in the parsed
  :class:`Calibration`: a chain parsed after the file is rewritten uses the new knots,
  one parsed before keeps the knots it read.

After every transform positives are set back to 1, values are clipped to
``[0, 1]`` and padded entries (``where`` False) are 0. Every transform is
non-decreasing in ``r`` within a query, so the order of a query's candidates never
flips (ties may appear: ``floor``, the flat parts of ``isotonic``).

Per-query transforms need the query's whole row, so a calibration is applied
where the rows of each direction are known: :class:`jitr.losses.objective`'s
``calibration`` (the train step's rows of each device are whole query rows, so
"8 devices = 1 device" still holds).

>>> import jax.numpy as jnp
>>> r = jnp.array([[1.0, 0.6, 0.8, 0.7]])
>>> pos = jnp.array([[True, False, False, False]])
>>> show = lambda m: [round(float(v), 4) for v in m[0]]
>>> show(calibrate(r, positives=pos, spec="minmax"))
[1.0, 0.0, 0.5, 0.25]
>>> show(calibrate(r, positives=pos, spec="minmax,power:2"))
[1.0, 0.0, 0.25, 0.0625]
>>> show(calibrate(r, positives=pos, spec="floor:0.7"))
[1.0, 0.0, 0.8, 0.7]
>>> show(calibrate(r, positives=pos, spec="threshold:0.6"))
[1.0, 0.0, 0.5, 0.25]
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jitr import fileio, paths

TABLES_DIR = os.path.join(os.path.dirname(paths.absolute(__file__)), "calibration_tables")


class CalibrationError(ValueError):
  """A calibration spec or table is malformed."""


@dataclasses.dataclass(frozen=True)
class IsotonicTable:
  """Knots of a monotone map ``[0, 1] -> [0, 1]``: ``x`` strictly increasing, ``y``
  non-decreasing, both in ``[0, 1]``; ``meta``: how it was fitted."""

  x: tuple[float, ...]
  y: tuple[float, ...]
  meta: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=False)


def table_path(name: str) -> str:
  """The file of ``isotonic:NAME``: a shipped table's name or a path ending in ``.json``."""
  if name.endswith(".json") or os.sep in name:
    return name
  return os.path.join(TABLES_DIR, f"{name}.json")


def shipped_tables() -> list[str]:
  """The names of the tables shipped in the package."""
  if not paths.isdir(TABLES_DIR):
    return []
  return sorted(f[: -len(".json")] for f in paths.listdir(TABLES_DIR) if f.endswith(".json"))


def check_table(x: Sequence[float], y: Sequence[float], where: str) -> None:
  """Raises :class:`CalibrationError` unless ``x`` is strictly increasing, ``y``
  non-decreasing, both in [0, 1], of one length >= 1."""
  xa, ya = np.asarray(x, np.float64), np.asarray(y, np.float64)
  if xa.ndim != 1 or xa.shape != ya.shape or xa.size == 0:
    raise CalibrationError(f"{where}: 'x' and 'y' must be lists of one length >= 1")
  if not (np.all(np.isfinite(xa)) and np.all(np.isfinite(ya))):
    raise CalibrationError(f"{where}: 'x' and 'y' must be finite")
  if np.any(np.diff(xa) <= 0):
    raise CalibrationError(f"{where}: 'x' must be strictly increasing")
  if np.any(np.diff(ya) < 0):
    raise CalibrationError(f"{where}: 'y' must be non-decreasing (a monotone map)")
  if xa.min() < 0 or xa.max() > 1 or ya.min() < 0 or ya.max() > 1:
    raise CalibrationError(f"{where}: 'x' and 'y' must lie in [0, 1]")


def load_table(name: str) -> IsotonicTable:
  """The isotonic table ``name`` (:func:`table_path`): JSON ``{"x": [...], "y": [...], ...}``,
  read from its file on every call."""
  path = table_path(name)
  if not paths.isfile(path):
    raise CalibrationError(
      f"isotonic:{name}: table file {path} not found "
      f"(shipped tables: {shipped_tables()}; or a path to a .json file)"
    )
  data = fileio.read_json(path, error=CalibrationError)
  if not isinstance(data, dict) or "x" not in data or "y" not in data:
    raise CalibrationError(f"{path}: expected a JSON object with 'x' and 'y' lists")
  check_table(data["x"], data["y"], path)
  meta = {k: v for k, v in data.items() if k not in ("x", "y")}
  return IsotonicTable(tuple(map(float, data["x"])), tuple(map(float, data["y"])), meta)


def minmax_rows(rows: jax.Array, where: jax.Array) -> jax.Array:
  """``(r - min_q) / (max_q - min_q)`` per row over its valid entries; 0 for a row whose
  valid entries are all equal (or that has none)."""
  lo = jnp.min(jnp.where(where, rows, jnp.inf), axis=-1, keepdims=True)
  hi = jnp.max(jnp.where(where, rows, -jnp.inf), axis=-1, keepdims=True)
  span = hi - lo
  ok = jnp.isfinite(span) & (span > 0)
  return jnp.where(ok, (rows - jnp.where(ok, lo, 0.0)) / jnp.where(ok, span, 1.0), 0.0)


def power(rows: jax.Array, exponent: float) -> jax.Array:
  """``r^p`` for ``r`` in [0, 1] (``0^p = 0``)."""
  return jnp.power(jnp.clip(rows, 0.0, 1.0), exponent)


def floor(rows: jax.Array, threshold: float) -> jax.Array:
  """``r`` where ``r >= t``, else 0."""
  return jnp.where(rows >= threshold, rows, 0.0)


def threshold(rows: jax.Array, t: float) -> jax.Array:
  """``max(0, (r - t) / (1 - t))``."""
  return jnp.maximum(rows - t, 0.0) / (1.0 - t)


def squeeze(rows: jax.Array, bounds: tuple[float, float]) -> jax.Array:
  """``lo + (hi - lo) r``."""
  lo, hi = bounds
  return lo + (hi - lo) * rows


def _bounds(name: str, arg: str | None) -> tuple[float, float]:
  try:
    lo, hi = (float(v) for v in (arg or "").split(":"))
  except ValueError:
    lo = hi = math.nan
  if not 0.0 <= lo < hi <= 1.0:
    raise CalibrationError(
      f"calibration {name}:{arg}: expected {name}:LO:HI with 0 <= LO < HI <= 1"
    )
  return lo, hi


def isotonic(rows: jax.Array, table: IsotonicTable) -> jax.Array:
  """The table's map by linear interpolation (``jnp.interp``; constant beyond the ends)."""
  xp = jnp.asarray(table.x, rows.dtype)
  fp = jnp.asarray(table.y, rows.dtype)
  return jnp.interp(rows, xp, fp)


def _number(name: str, arg: str | None, low: float, high: float, *, open_low: bool) -> float:
  try:
    value = float(arg) if arg is not None else math.nan
  except ValueError:
    value = math.nan
  ok = (value > low if open_low else value >= low) and value <= high
  if not ok:
    bound = "(" if open_low else "["
    raise CalibrationError(
      f"calibration {name}:{arg}: expected {name}:NUMBER with NUMBER in {bound}{low}, {high}]"
    )
  return value


def _no_argument(name: str, arg: str | None) -> None:
  if arg is not None:
    raise CalibrationError(f"calibration {name}:{arg}: {name} takes no argument")
  return None


def _table_argument(name: str, arg: str | None) -> IsotonicTable:
  if not arg:
    raise CalibrationError(
      f"calibration {name}: expected {name}:TABLE (one of {shipped_tables()} or a .json path)"
    )
  return load_table(arg)


@dataclasses.dataclass(frozen=True)
class TransformKind:
  """A transform of the registry: ``parse(name, arg) -> value``; ``apply(rows, where, value)``.

  ``per_query``: it depends on the query's row (not elementwise); ``strict``: an
  elementwise, strictly increasing map of [0, 1] onto itself (no ties made or broken).
  """

  parse: Callable[[str, str | None], Any]
  apply: Callable[[jax.Array, jax.Array, Any], jax.Array]
  per_query: bool = False
  strict: bool = False


TRANSFORMS: Mapping[str, TransformKind] = {
  "minmax": TransformKind(_no_argument, lambda r, w, _: minmax_rows(r, w), per_query=True),
  "power": TransformKind(
    lambda n, a: _number(n, a, 0.0, 1e6, open_low=True), lambda r, w, p: power(r, p), strict=True
  ),
  "floor": TransformKind(
    lambda n, a: _number(n, a, 0.0, 1.0, open_low=False), lambda r, w, t: floor(r, t)
  ),
  "threshold": TransformKind(
    lambda n, a: _number(n, a, 0.0, 0.999, open_low=False), lambda r, w, t: threshold(r, t)
  ),
  "isotonic": TransformKind(_table_argument, lambda r, w, table: isotonic(r, table)),
  "range": TransformKind(_bounds, lambda r, w, bounds: squeeze(r, bounds)),
}


@dataclasses.dataclass(frozen=True)
class Calibration:
  """A parsed chain: ``steps`` of ``(transform name, parsed argument)``; ``spec`` as written."""

  spec: str
  steps: tuple[tuple[str, Any], ...]

  def __bool__(self) -> bool:
    return bool(self.steps)

  @property
  def per_query(self) -> bool:
    """Whether a step depends on the whole query row (image and caption queries differ)."""
    return any(TRANSFORMS[name].per_query for name, _ in self.steps)

  @property
  def strict(self) -> bool:
    """Whether the chain is elementwise and strictly increasing (it keeps every order)."""
    return all(TRANSFORMS[name].strict for name, _ in self.steps)

  def __call__(
    self, rows: jax.Array, *, positives: jax.Array | None = None, where: jax.Array | None = None
  ) -> jax.Array:
    """The chain on query rows ``[Q, C]`` (positives 1, clipped to [0, 1], padding 0)."""
    chex.assert_rank(rows, 2)
    rows = jnp.asarray(rows, jnp.float32)
    where = jnp.ones(rows.shape, bool) if where is None else jnp.asarray(where, bool)
    positives = jnp.zeros(rows.shape, bool) if positives is None else jnp.asarray(positives, bool)
    chex.assert_shape([where, positives], rows.shape)

    def settle(r):
      return jnp.where(where, jnp.where(positives, 1.0, jnp.clip(r, 0.0, 1.0)), 0.0)

    rows = settle(rows)
    for name, value in self.steps:
      rows = settle(TRANSFORMS[name].apply(rows, where, value))
    return rows


NONE = Calibration("", ())


def parse_calibration(spec: str | Sequence[str] | Calibration | None) -> Calibration:
  """``"minmax,power:2"`` (or ``["minmax", "power:2"]``) -> :class:`Calibration`.

  ``None``, ``""`` and ``"none"`` are the identity.

  >>> parse_calibration("minmax, power:2").steps
  (('minmax', None), ('power', 2.0))
  >>> parse_calibration("sharpen")
  Traceback (most recent call last):
  ...
  jitr.losses.calibration.CalibrationError: calibration 'sharpen': unknown transform 'sharpen' \
(expected a comma-separated chain of ['floor:T', 'isotonic:TABLE', 'minmax', 'power:P', \
'range:LO:HI', 'threshold:T'])
  """
  if isinstance(spec, Calibration):
    return spec
  if spec is None:
    return NONE
  parts = spec.split(",") if isinstance(spec, str) else list(spec)
  parts = [str(p).strip() for p in parts if str(p).strip()]
  if parts == ["none"]:
    return NONE
  steps = []
  for part in parts:
    name, colon, arg = part.partition(":")
    if name not in TRANSFORMS:
      forms = ["floor:T", "isotonic:TABLE", "minmax", "power:P", "range:LO:HI", "threshold:T"]
      raise CalibrationError(
        f"calibration {part!r}: unknown transform {name!r} "
        f"(expected a comma-separated chain of {forms})"
      )
    steps.append((name, TRANSFORMS[name].parse(name, arg.strip() if colon else None)))
  return Calibration(",".join(parts), tuple(steps))


def calibrate(
  relevance: jax.Array,
  *,
  spec: str | Sequence[str] | Calibration | None,
  positives: jax.Array | None = None,
  where: jax.Array | None = None,
) -> jax.Array:
  """``parse_calibration(spec)`` applied to query rows ``relevance [Q, C]``.

  For a ``[N_img, N_txt]`` matrix, image queries are its rows (``calibrate(r, ...)``)
  and caption queries its columns (``calibrate(r.T, positives=positives.T, ...)``).
  """
  return parse_calibration(spec)(relevance, positives=positives, where=where)
