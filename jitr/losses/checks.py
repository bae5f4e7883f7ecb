"""Trace-time checks of the losses' hyper-parameters and the NaN convention.

Each check raises one ``ValueError`` naming the argument and the expected
range. Hyper-parameters are checked when they are Python / numpy numbers (or
concrete arrays); a traced array (e.g. a scheduled temperature inside ``jit``)
is not checked. A bool or a string is never taken for a number.

Each loss declares the range of every hyper-parameter (a :class:`Range` per name beside
its per-query function); the same declaration checks a call (:meth:`Range.check`, the lines
above) and a config field (:meth:`Range.check_config`, ``config.FIELD: expected ...``).

NaN convention (every loss): a non-finite value in a *valid* entry (``where``
True) of ``sim`` or of the graded matrix of a query that counts makes that
query's loss NaN and the gradient of that query's valid ``sim`` entries NaN
(:func:`propagate_nonfinite`), so the mean/sum and the gradient are NaN too;
padded entries (``where`` False) never matter, even if NaN.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Collection
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jitr import config_fields

__all__ = [
  "BLOCK_SIZE",
  "FINITE",
  "NONNEGATIVE",
  "POSITIVE",
  "SWITCH",
  "UNIT_INTERVAL",
  "Bound",
  "Choice",
  "Range",
  "check_bool",
  "check_block_size",
  "check_choice",
  "check_finite",
  "check_nonnegative",
  "check_positive",
  "check_unit_interval",
  "propagate_nonfinite",
]


def _static(name: str, value: Any, expected: str) -> float | None:
  """``float(value)`` when it is known at trace time, else None (traced arrays).

  A bool or a string is no number: ``ValueError`` naming ``name`` and ``expected``.
  """
  if isinstance(value, (bool, np.bool_, str, bytes)):
    raise ValueError(f"{name}: expected {expected}, got {value!r} ({type(value).__name__})")
  try:
    return float(value)
  except (TypeError, jax.errors.ConcretizationTypeError):
    return None


def check_positive(name: str, value: Any) -> None:
  """``value`` must be a finite number > 0 (a temperature, a sharpness)."""
  POSITIVE.check(name, value)


def check_nonnegative(name: str, value: Any) -> None:
  """``value`` must be a finite number >= 0 (a margin, a term weight)."""
  NONNEGATIVE.check(name, value)


def check_finite(name: str, value: Any) -> None:
  """``value`` must be a finite number (of either sign)."""
  FINITE.check(name, value)


def check_unit_interval(name: str, value: Any) -> None:
  """``value`` must lie in [0, 1] (a direction weight)."""
  v = _static(name, value, "a number in [0, 1]")
  if v is not None and not 0.0 <= v <= 1.0:
    raise ValueError(f"{name}: expected a number in [0, 1], got {value!r}")


def check_bool(name: str, value: Any) -> None:
  """``value`` must be a bool (a switch; ``"False"`` or ``0`` is not one)."""
  if not isinstance(value, (bool, np.bool_)):
    raise ValueError(f"{name}: expected True or False, got {value!r} ({type(value).__name__})")


def check_int(name: str, value: Any, minimum: int) -> None:
  """``value`` must be an int >= ``minimum``."""
  if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
    raise ValueError(f"{name}: expected an int >= {minimum}, got {value!r}")


def check_block_size(name: str, value: Any) -> None:
  """``value`` must be an int >= 1."""
  check_int(name, value, 1)


def check_choice(name: str, value: Any, choices: Collection[str]) -> None:
  """``value`` must be one of ``choices``."""
  if value not in choices:
    raise ValueError(f"{name}: expected one of {sorted(choices)}, got {value!r}")


def propagate_nonfinite(
  loss: jax.Array, where: jax.Array, sim: jax.Array, *matrices: jax.Array | None
) -> jax.Array:
  """``loss + Σ_j [where_j] sim_j·z`` per row, ``z = Σ_j [where_j] 0·x_j`` over ``sim``
  and ``matrices`` (not differentiated): NaN where a valid entry is not finite, in the
  value and in the gradient alike.

  ``loss`` is ``[Q]``; ``sim`` and each matrix ``[Q, C]`` (None skipped). ``0·x`` is 0
  for finite ``x`` and NaN for NaN / ±inf, so ``z`` is 0 for a row whose valid entries
  are all finite -- the loss and its gradient unchanged -- and NaN otherwise: the row's
  loss is NaN and so is the gradient of every valid ``sim`` entry of that row (a NaN in
  the graded matrix, which is not differentiated, still reaches ``∂L/∂sim``). Padded
  entries are selected away.
  """
  z = jnp.zeros(loss.shape, loss.dtype)
  for x in (sim, *matrices):
    if x is not None:
      z = z + jnp.sum(jnp.where(where, x.astype(loss.dtype) * 0, 0), axis=-1)
  valid_sim = jnp.where(where, sim.astype(loss.dtype), 0)
  return loss + jnp.sum(valid_sim * jax.lax.stop_gradient(z)[..., None], axis=-1)


class Range:
  """What one hyper-parameter takes: :meth:`check` a call's value, :meth:`check_config` a
  config field's."""

  def check(self, name: str, value: Any) -> None:
    """Raises ``ValueError`` ``NAME: expected ..., got V`` (a traced value passes)."""
    raise NotImplementedError

  def check_config(self, field: str, value: Any) -> None:
    """Raises ``ValueError`` ``config.FIELD: expected ..., got V``."""
    raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Bound(Range):
  """A finite number ``>= minimum`` (``inclusive``) or ``> minimum``; any finite number when
  ``minimum`` is None. ``optional``: None is also taken (a switched-off clip)."""

  minimum: float | None = None
  inclusive: bool = True
  optional: bool = False

  @property
  def expected(self) -> str:
    """``a finite number >= 0`` and the like, as every line says it."""
    if self.minimum is None:
      return "a finite number"
    return f"a finite number {'>=' if self.inclusive else '>'} {self.minimum:g}"

  def within(self, value: float) -> bool:
    """Whether the float ``value`` is in range."""
    if not math.isfinite(value) or self.minimum is None:
      return math.isfinite(value)
    return value >= self.minimum if self.inclusive else value > self.minimum

  def check(self, name: str, value: Any) -> None:
    if value is None and self.optional:
      return
    v = _static(name, value, self.expected)
    if v is not None and not self.within(v):
      raise ValueError(f"{name}: expected {self.expected}, got {value!r}")

  def check_config(self, field: str, value: Any) -> None:
    if value is None and self.optional:
      return
    config_fields.check_number(field, value, self.minimum, self.inclusive)


@dataclasses.dataclass(frozen=True)
class _UnitInterval(Range):
  """A number in [0, 1] (a direction weight)."""

  def check(self, name: str, value: Any) -> None:
    check_unit_interval(name, value)

  def check_config(self, field: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= 1:
      raise ValueError(f"config.{field}: expected a number in [0, 1], got {value!r}")


@dataclasses.dataclass(frozen=True)
class _Switch(Range):
  """True or False."""

  def check(self, name: str, value: Any) -> None:
    check_bool(name, value)

  def check_config(self, field: str, value: Any) -> None:
    config_fields.check_bool(field, value)


@dataclasses.dataclass(frozen=True)
class _AtLeast(Range):
  """An int >= ``minimum``."""

  minimum: int

  def check(self, name: str, value: Any) -> None:
    check_int(name, value, self.minimum)

  def check_config(self, field: str, value: Any) -> None:
    check_int(f"config.{field}", value, self.minimum)


@dataclasses.dataclass(frozen=True)
class Choice(Range):
  """One of ``options`` (strings)."""

  options: tuple[str, ...]

  def check(self, name: str, value: Any) -> None:
    check_choice(name, value, self.options)

  def check_config(self, field: str, value: Any) -> None:
    check_choice(f"config.{field}", value, self.options)


#: A margin, a term weight: a finite number >= 0.
NONNEGATIVE = Bound(0.0)
#: A temperature, a sharpness: a finite number > 0.
POSITIVE = Bound(0.0, inclusive=False)
#: A finite number of either sign (LSEH's λ).
FINITE = Bound()
#: A number in [0, 1] (CMAL²R's α).
UNIT_INTERVAL = _UnitInterval()
#: True or False.
SWITCH = _Switch()
#: An int >= 1 (rows mapped at once).
BLOCK_SIZE = _AtLeast(1)
#: An int >= 0 (a cut-off where 0 means none: Smooth-NDCG's ``top_m``).
COUNT = _AtLeast(0)
