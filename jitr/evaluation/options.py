"""What ``evaluate_retrieval`` computes and how: cut-offs, protocols, directions, blocks.

:class:`EvalOptions` holds every choice that does not depend on the data, validated
once when it is built: a bad field raises one ``ValueError`` that names it.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence

from jitr.evaluation.checks import check_ks
from jitr.evaluation.cross_modal import DIRECTIONS

__all__ = ["DEFAULT_OPTIONS", "EvalOptions"]

CURVE_KS = (1, 2, 3, 5, 10, 20, 50, 100)


@dataclasses.dataclass(frozen=True)
class EvalOptions:
  """The options of :func:`~jitr.evaluation.evaluate_retrieval`.

  Cut-off lists are stored as sorted tuples of distinct integers >= 1.

  Attributes:
    recall_ks: cut-offs of RSUM / M-Recall (always reported; non-empty).
    curve_ks: extra Recall@K cut-offs for the recall curves (may be empty).
    ndcg_ks: NDCG cut-offs, used when graded relevance is given (empty: no NDCG).
    semantic_ks: NCS / Semantic Recall cut-offs, used when semantic scores or
      relevance are given (empty: none).
    semantic_num_relevant: ``N`` of Semantic Recall (>= 1).
    class_map_k: truncate class AP to the top k (>= 1; None: full ranking).
    folds: number of equal contiguous image folds of the ``folds/`` protocol (COCO 1K
      with 5 folds of the 5K test); it must divide the number of images. None: none.
    extended_map: which extended positive sets also get mAP@R and R-Precision (True:
      all; a list of names; False: none -- Recall@K only).
    directions: subset of ``("i2t", "t2i")``.
    percent: report rates in percent (R@K 0..100, RSUM 0..600), else as fractions.
    chunk_size: queries per score block (>= 1; None: blocks of about 8 MB float32).

  >>> EvalOptions(recall_ks=[5, 1, 5], ndcg_ks=()).recall_ks
  (1, 5)
  >>> EvalOptions(folds=0)
  Traceback (most recent call last):
  ...
  ValueError: `folds` must be an integer >= 1 or None, got 0
  """

  recall_ks: Sequence[int] = (1, 5, 10)
  curve_ks: Sequence[int] = CURVE_KS
  ndcg_ks: Sequence[int] = CURVE_KS
  semantic_ks: Sequence[int] = (1, 5, 10)
  semantic_num_relevant: int = 1
  class_map_k: int | None = None
  folds: int | None = None
  extended_map: bool | Sequence[str] = True
  directions: Sequence[str] = DIRECTIONS
  percent: bool = True
  chunk_size: int | None = None

  def __post_init__(self):
    normalised = {
      "recall_ks": _ks(self.recall_ks, "recall_ks", required=True),
      "curve_ks": _ks(self.curve_ks, "curve_ks"),
      "ndcg_ks": _ks(self.ndcg_ks, "ndcg_ks"),
      "semantic_ks": _ks(self.semantic_ks, "semantic_ks"),
      "semantic_num_relevant": _count(self.semantic_num_relevant, "semantic_num_relevant"),
      "class_map_k": _count(self.class_map_k, "class_map_k", optional=True),
      "folds": _count(self.folds, "folds", optional=True),
      "extended_map": _extended_map(self.extended_map),
      "directions": _directions(self.directions),
      "percent": _flag(self.percent, "percent"),
      "chunk_size": _count(self.chunk_size, "chunk_size", optional=True),
    }
    for name, value in normalised.items():
      object.__setattr__(self, name, value)

  @property
  def all_recall_ks(self) -> tuple[int, ...]:
    """Every reported Recall@K cut-off: ``recall_ks`` and ``curve_ks``, sorted."""
    return tuple(sorted({*self.recall_ks, *self.curve_ks}))


def _ks(ks: Sequence[int], name: str, *, required: bool = False) -> tuple[int, ...]:
  """``ks`` sorted and distinct (``check_ks``); ``()`` for an empty list unless ``required``."""
  try:
    ks = tuple(ks) if not isinstance(ks, str) else None
  except TypeError:
    ks = None
  if ks is None:
    raise ValueError(f"`{name}` must be a list of integers >= 1")
  return check_ks(ks, name) if required or ks else ()


def _count(value: int | None, name: str, *, optional: bool = False) -> int | None:
  """``value`` as an int >= 1 (None too when ``optional``); a ValueError naming ``name``
  otherwise."""
  if value is None and optional:
    return None
  try:
    n = None if isinstance(value, bool) else operator.index(value)
  except TypeError:
    n = None
  if n is None or n < 1:
    expected = "an integer >= 1" + (" or None" if optional else "")
    raise ValueError(f"`{name}` must be {expected}, got {value!r}")
  return n


def _flag(value: bool, name: str) -> bool:
  """``value`` when it is a bool; a ValueError naming ``name`` otherwise."""
  if not isinstance(value, bool):
    raise ValueError(f"`{name}` must be True or False, got {value!r}")
  return value


def _extended_map(value: bool | Sequence[str]) -> bool | tuple[str, ...]:
  """True, False or the names as a tuple of strings."""
  if isinstance(value, bool):
    return value
  names = _strings(value)
  if names is None:
    raise ValueError(f"`extended_map` must be True, False or a list of names, got {value!r}")
  return names


def _directions(directions: Sequence[str]) -> tuple[str, ...]:
  """``directions`` as a tuple, each ``"i2t"`` or ``"t2i"``."""
  names = _strings(directions)
  if names is None or any(d not in DIRECTIONS for d in names):
    raise ValueError(f"`directions` entries must be 'i2t' or 't2i', got {directions!r}")
  return names


def _strings(value: Sequence[str]) -> tuple[str, ...] | None:
  """``value`` as a tuple of strings, or None when it is a string itself or not a list of
  strings."""
  if isinstance(value, str):
    return None
  try:
    out = tuple(value)
  except TypeError:
    return None
  return out if all(isinstance(v, str) for v in out) else None


DEFAULT_OPTIONS = EvalOptions()
"""Every default: the full metric set, both directions, in percent."""
