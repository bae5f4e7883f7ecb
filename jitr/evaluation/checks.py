"""The two argument checks every metric shares: cut-off lists and matching sizes.

Both raise one ``ValueError`` that names the argument and what was expected.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["check_ks", "check_sizes"]


def check_ks(ks: Sequence[int], name: str = "ks") -> tuple[int, ...]:
  """``ks`` as sorted distinct ints; a non-empty list of integers >= 1 is required.

  >>> check_ks([10, 1, 5, 1], "recall_ks")
  (1, 5, 10)
  """
  try:
    out = tuple(sorted({int(k) for k in ks}))
  except (TypeError, ValueError) as e:
    raise ValueError(f"`{name}` must be a non-empty list of integers >= 1, got {ks!r}") from e
  if not out or out[0] < 1:
    raise ValueError(f"`{name}` must be a non-empty list of integers >= 1, got {out}")
  return out


def check_sizes(name: str, got: Sequence[int], want: Sequence[int], like: str) -> None:
  """Raises ``"`name` is 4 x 7, expected 4 x 8 like `like`"`` when the sizes differ.

  >>> check_sizes("relevance", (4, 7), (4, 8), "sim")
  Traceback (most recent call last):
  ...
  ValueError: `relevance` is 4 x 7, expected 4 x 8 like `sim`
  """
  got, want = tuple(int(n) for n in got), tuple(int(n) for n in want)
  if got != want:
    raise ValueError(
      f"`{name}` is {' x '.join(map(str, got))}, expected {' x '.join(map(str, want))} "
      f"like `{like}`"
    )
