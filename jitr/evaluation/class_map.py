"""MAP over class labels (the CMAL^2R protocol).

A gallery item is relevant to a query when they share at least one class.
With ``m`` relevant items and ``rank_i`` the 1-based rank of the ``i``-th one
in the full ranking (score descending, index tie-break):

    AP  = (1/m) sum_{i=1..m} i / rank_i
    MAP = mean of AP over the queries with m > 0

With ``k``: ``AP@k = sum_{i<=k} rel_i P@i / sum_{i<=k} rel_i`` (0 when the top
k holds no relevant item). The full-ranking AP sorts each row (numpy, per
block, exact); ``k`` bounds the work for very large galleries.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from jitr.evaluation.checks import check_sizes
from jitr.evaluation.engine import SweepConfig, SweepData, sweep
from jitr.evaluation.positives import PositiveSets
from jitr.evaluation.sources import as_scores

__all__ = ["ClassLabels", "as_multihot", "class_map"]


@dataclasses.dataclass(frozen=True)
class ClassLabels:
  """The class labels of the class-label MAP of
  :func:`~jitr.evaluation.evaluate_retrieval` (its ``labels``)."""

  images: Any
  """Each image's class ids ``(num_images,)`` or memberships ``(num_images, C)``."""
  captions: Any = None
  """Each caption's, in the same forms; None: its image's labels."""


def as_multihot(labels, *, num_classes: int | None = None, name: str = "labels") -> np.ndarray:
  """``(n,)`` integer class ids or ``(n, C)`` 0/1 memberships -> ``(n, C)`` bool."""
  labels = np.asarray(labels)
  if labels.ndim == 1:
    if not np.issubdtype(labels.dtype, np.integer) or (labels.size and labels.min() < 0):
      raise ValueError(
        f"`{name}` as a 1-D array must hold class ids >= 0, got dtype {labels.dtype}"
      )
    c = int(labels.max()) + 1 if num_classes is None else int(num_classes)
    out = np.zeros((labels.shape[0], c), bool)
    out[np.arange(labels.shape[0]), labels] = True
    return out
  if labels.ndim == 2:
    out = labels.astype(bool)
    if num_classes is not None and out.shape[1] != num_classes:
      raise ValueError(f"`{name}` must have {num_classes} columns, got {out.shape[1]}")
    return out
  raise ValueError(
    f"`{name}` must be (n,) class ids or (n, C) memberships, got shape {labels.shape}"
  )


def class_map(
  scores, query_labels, gallery_labels, *, k: int | None = None, chunk_size: int | None = None
) -> float:
  """MAP (fraction) of one direction with class-label relevance.

  Args:
    scores: ``(Q, G)`` scores (array or Scores source).
    query_labels: ``(Q,)`` class ids or ``(Q, C)`` memberships.
    gallery_labels: ``(G,)`` class ids or ``(G, C)`` memberships.
    k: truncate to the top k (None: full ranking).

  >>> import numpy as np
  >>> scores = np.array([[0.8, 0.9, 0.3, 0.5, 0.1]])  # ranking 1, 0, 3, 2, 4
  >>> print(round(class_map(scores, np.array([0]), np.array([0, 1, 0, 1, 0])), 4))
  0.5333
  """
  src = as_scores(scores)
  ql = np.asarray(query_labels)
  gl = np.asarray(gallery_labels)
  c = None
  if ql.ndim == 1 and gl.ndim == 1:
    c = int(max(ql.max(initial=0), gl.max(initial=0))) + 1
  ql = as_multihot(ql, num_classes=c, name="query_labels")
  gl = as_multihot(gl, num_classes=ql.shape[1], name="gallery_labels")
  check_sizes("query_labels", ql.shape[:1], (src.num_queries,), "scores")
  check_sizes("gallery_labels", gl.shape[:1], (src.num_gallery,), "scores")
  if k is not None and k < 1:
    raise ValueError(f"`k` must be >= 1 or None, got {k}")
  res = sweep(
    src,
    PositiveSets.empty(src.num_queries, src.num_gallery),
    cfg=SweepConfig(class_map_k=k),
    data=SweepData(query_labels=ql, gallery_labels=gl),
    chunk_size=chunk_size,
  )
  return mean_class_ap(res.class_ap, res.class_valid)


def mean_class_ap(ap: np.ndarray, valid: np.ndarray) -> float:
  """Mean of the per-query APs over the queries with a relevant item (NaN if none)."""
  return float(np.mean(ap[valid])) if valid.any() else float("nan")
