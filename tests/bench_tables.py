"""Checks of what the benchmark scripts print: markdown table rows, and whether a printed
(rounded) number is the value it is said to be derived from."""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_NUMBER = re.compile(r"[-+]?[0-9][0-9,]*(?:\.([0-9]+))?")


def load_script(name: str):
  """``scripts/<name>.py`` as a module (not run as ``__main__``)."""
  spec = importlib.util.spec_from_file_location(
    f"{name}_under_test", REPO / "scripts" / f"{name}.py"
  )
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def table_rows(text: str, prefix: str) -> list[list[str]]:
  """The cells (stripped) of the markdown rows of ``text`` that start with ``prefix``."""
  return [
    [c.strip() for c in line.strip().strip("|").split("|")]
    for line in text.splitlines()
    if line.startswith(prefix)
  ]


def printed(cell: str) -> tuple[float, float]:
  """``(lo, hi)``: the values a number printed at the start of ``cell`` (``87.22``,
  ``1,234``, ``76.69×``, ``3 MiB``) can have been rounded from."""
  m = _NUMBER.match(cell.strip())
  assert m, f"no number at the start of {cell!r}"
  value = float(m.group(0).replace(",", ""))
  half = 0.5 * 10.0 ** -len(m.group(1) or "")
  return value - half, value + half


def quotient(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
  """The interval of ``a / b`` for non-negative intervals (``b``'s upper end positive)."""
  assert a[0] >= -1e-12 and b[1] > 0, (a, b)
  return max(a[0], 0.0) / b[1], (math.inf if b[0] <= 0 else a[1] / b[0])


def assert_printed_value(cell: str, value, what: str = "") -> None:
  """``cell``'s number is ``value`` (a number or a ``(lo, hi)`` interval) as rounded for
  printing."""
  lo, hi = value if isinstance(value, tuple) else (value, value)
  c_lo, c_hi = printed(cell)
  assert c_lo - 1e-9 <= hi and lo <= c_hi + 1e-9, f"{what}: printed {cell!r}, expected {value}"
