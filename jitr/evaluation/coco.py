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

from collections.abc import Sequence

from jitr.evaluation.folds import contiguous_folds
from jitr.evaluation.options import EvalOptions
from jitr.evaluation.suite import evaluate_retrieval

__all__ = ["coco_recalls", "contiguous_folds"]

PROTOCOL_NAMES = {"full": "5k", "folds": "1k"}


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
    ``5k/mR`` and the same with ``1k/`` (means over the folds), and
    ``nonfinite_scores`` (see :func:`~jitr.evaluation.evaluate_retrieval`).
  """
  options = EvalOptions(
    folds=num_folds, recall_ks=ks, curve_ks=ks, percent=percent, chunk_size=chunk_size
  )
  res = evaluate_retrieval(sim, caption_to_image=caption_to_image, options=options)
  out = {}
  for key, v in res.items():
    proto, _, rest = key.partition("/")
    out[f"{PROTOCOL_NAMES[proto]}/{rest}" if rest else key] = v
  return out
