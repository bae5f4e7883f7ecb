"""Checks of single config values, shared by every component that checks its own config
slice: each raises ``ValueError`` in one line ``config.FIELD: expected ..., got ...``."""

from __future__ import annotations

import math
import numbers
from typing import Any


def check_number(field: str, value: Any, minimum: float | None, inclusive: bool = True) -> None:
  """Raises ``ValueError`` ``config.FIELD: expected a finite number > / >= MINIMUM, got V``
  unless ``value`` is such a number (a bool or a string is not one); ``minimum`` None: any
  finite number (``expected a finite number``)."""
  expected = "a finite number"
  if minimum is not None:
    expected += f" {'>=' if inclusive else '>'} {minimum:g}"
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise ValueError(f"config.{field}: expected {expected}, got {value!r} ({type(value).__name__})")
  v = float(value)
  above = minimum is None or (v >= minimum if inclusive else v > minimum)
  if not (math.isfinite(v) and above):
    raise ValueError(f"config.{field}: expected {expected}, got {value!r}")


def check_divides_batch(config: Any, field: str) -> None:
  """``config.<field>`` (a number of chunks) divides ``config.batch_size``: one line
  ``config.<field>: expected a divisor of config.batch_size (B), got K`` otherwise (each
  device's share is checked when the step runs and the devices are known)."""
  chunks = config[field]
  if config.batch_size % chunks:
    raise ValueError(
      f"config.{field}: expected a divisor of config.batch_size ({config.batch_size}), got {chunks}"
    )


def check_bool(field: str, value: Any) -> None:
  """Raises ``ValueError`` ``config.FIELD: expected True or False, got V`` unless
  ``value`` is a bool."""
  if not isinstance(value, bool):
    raise ValueError(
      f"config.{field}: expected True or False, got {value!r} ({type(value).__name__})"
    )


def check_probability(field: str, value: Any) -> None:
  """Raises ``ValueError`` ``config.FIELD: expected a probability in [0, 1), got V`` unless
  ``value`` is a number (not a bool) in [0, 1)."""
  if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
    raise ValueError(f"config.{field}: expected a probability in [0, 1), got {value!r}")
