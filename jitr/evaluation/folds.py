"""Sub-gallery folds (the COCO 1K protocol's layout) and averaging over them.

Folds are given per image; a caption is in its image's fold. Each query is
ranked only against the items of its own fold, and a metric is the mean over
the folds of the per-fold metric:

    m_folds = (1/F) sum_f m(queries of fold f)

By default folds are contiguous blocks of images (image ``i`` is in fold
``i // (N / F)``, the order of the standard precomputed test files).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = ["FoldGroups", "contiguous_folds", "fold_groups", "fold_average"]


class FoldGroups(NamedTuple):
  """One direction's sub-galleries.

  Attributes:
    groups: ``(F, G)`` bool, the gallery items of each fold.
    group_of_query: ``(Q,)`` fold id of each query.
  """

  groups: np.ndarray
  group_of_query: np.ndarray


def contiguous_folds(num_images: int, num_folds: int) -> np.ndarray:
  """``(num_images,)`` fold id of each image: equal contiguous blocks.

  >>> contiguous_folds(6, 3).tolist()
  [0, 0, 1, 1, 2, 2]
  """
  if num_folds < 1 or num_images % num_folds:
    raise ValueError(f"`num_folds` must divide the number of images {num_images}, got {num_folds}")
  return np.arange(num_images) // (num_images // num_folds)


def fold_groups(image_fold: np.ndarray, caption_to_image: np.ndarray) -> dict[str, FoldGroups]:
  """``{"i2t": ..., "t2i": ...}`` sub-galleries from the images' fold ids.

  ``i2t`` has image queries over the captions of each fold, ``t2i`` caption
  queries (in their image's fold) over the images of each fold.
  """
  image_fold = np.asarray(image_fold)
  owner = np.asarray(caption_to_image)
  if image_fold.ndim != 1 or not np.issubdtype(image_fold.dtype, np.integer):
    raise ValueError(
      f"`fold_ids` must be a 1-D integer array of image fold ids, got "
      f"shape {image_fold.shape} dtype {image_fold.dtype}"
    )
  if image_fold.min() < 0:
    raise ValueError("`fold_ids` must hold fold ids >= 0")
  ids = np.arange(int(image_fold.max()) + 1)[:, None]
  caption_fold = image_fold[owner]
  return {
    "i2t": FoldGroups(caption_fold[None] == ids, image_fold),
    "t2i": FoldGroups(image_fold[None] == ids, caption_fold),
  }


def fold_average(
  values: np.ndarray, fold_of_query: np.ndarray, fn: Callable[[np.ndarray], float]
) -> float:
  """``(1/F) sum_f fn(values[fold == f])`` over the non-empty folds.

  >>> fold_average(np.array([1.0, 3.0, 10.0]), np.array([0, 0, 1]), np.mean)
  6.0
  """
  fold_of_query = np.asarray(fold_of_query)
  per = [fn(values[fold_of_query == f]) for f in np.unique(fold_of_query)]
  return float(np.mean(per))
