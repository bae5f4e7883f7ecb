"""The COCO 5K and 1K (five-fold) protocols, and fold helpers.

COCO 5K ranks each query against the whole 5,000-image / 25,000-caption test
split. COCO 1K splits the images into five folds of 1,000 (with their 5,000
captions), ranks each query only against its own fold and reports the mean
over the five folds of each fold's metric:

    R@K_1K = (1/5) sum_f (1/|Q_f|) sum_{q in Q_f} [rank_f(q) < K]

where ``rank_f(q)`` is the rank of q's best positive among the items of fold
``f``. Folds are contiguous blocks of images by default (image ``i`` is in
fold ``i // (N / 5)``, the order of the standard precomputed test files); a
caption is in its image's fold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["contiguous_folds", "fold_layout", "fold_average", "coco_recalls"]


def contiguous_folds(num_images: int, num_folds: int) -> np.ndarray:
  """``(num_images,)`` fold id of each image: equal contiguous blocks."""
  if num_folds < 1 or num_images % num_folds:
    raise ValueError(f"`num_folds` must divide the number of images {num_images}, got {num_folds}")
  return np.arange(num_images) // (num_images // num_folds)


def fold_layout(image_fold: np.ndarray, caption_to_image: np.ndarray):
  """Sub-galleries for both directions from the images' fold ids.

  Returns:
    ``(num_folds, i2t_groups, i2t_group_of_query, t2i_groups,
    t2i_group_of_query)``: ``i2t_groups`` is ``(F, num_captions)`` bool (the
    captions of each fold), ``t2i_groups`` ``(F, num_images)``; the
    ``group_of_query`` arrays give each image's / caption's fold.
  """
  image_fold = np.asarray(image_fold)
  owner = np.asarray(caption_to_image)
  if image_fold.ndim != 1 or not np.issubdtype(image_fold.dtype, np.integer):
    raise ValueError(
      f"`folds` must be a 1-D integer array of image fold ids, got "
      f"shape {image_fold.shape} dtype {image_fold.dtype}"
    )
  if image_fold.min() < 0:
    raise ValueError("`folds` must hold fold ids >= 0")
  num_folds = int(image_fold.max()) + 1
  caption_fold = image_fold[owner]
  ids = np.arange(num_folds)[:, None]
  return (num_folds, caption_fold[None] == ids, image_fold, image_fold[None] == ids, caption_fold)


def fold_average(
  values: np.ndarray, fold_of_query: np.ndarray, fn: Callable[[np.ndarray], float]
) -> float:
  """``(1/F) sum_f fn(values[fold == f])`` over the non-empty folds."""
  fold_of_query = np.asarray(fold_of_query)
  per = [fn(values[fold_of_query == f]) for f in np.unique(fold_of_query)]
  return float(np.mean(per))


def coco_recalls(
  sim,
  *,
  caption_to_image,
  num_folds: int = 5,
  ks: Sequence[int] = (1, 5, 10),
  percent: bool = True,
  chunk_size: int | None = None,
) -> dict[str, float]:
  """COCO 5K and 1K recalls, RSUM, M-Recall and ranks.

  Args:
    sim: ``(num_images, num_captions)`` similarities (5,000 x 25,000 for the
      COCO test split), or a :class:`~jitr.evaluation.suite.CrossModalScores`.
    caption_to_image: ``(num_captions,)`` image index of each caption.
    num_folds: folds of the 1K protocol (contiguous image blocks).
    ks: recall cut-offs.
    percent: report rates in percent.

  Returns:
    Keys ``5k/{i2t,t2i}/R@K``, ``5k/{i2t,t2i}/{medr,meanr}``, ``5k/rsum``,
    ``5k/mR`` and the same with ``1k/`` (means over the folds).
  """
  from jitr.evaluation.suite import evaluate_retrieval  # pylint: disable=g-import-not-at-top

  res = evaluate_retrieval(
    sim,
    caption_to_image=caption_to_image,
    folds=num_folds,
    recall_ks=ks,
    curve_ks=ks,
    percent=percent,
    chunk_size=chunk_size,
  )
  out = {}
  for key, v in res.items():
    proto, rest = key.split("/", 1)
    out[{"full": "5k", "folds": "1k"}[proto] + "/" + rest] = v
  return out
