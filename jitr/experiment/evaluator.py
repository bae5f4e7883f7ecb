"""A run's evaluation: a split's similarity matrix under a model, and its full metric set."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitr.evaluation.class_map import ClassLabels
from jitr.evaluation.options import EvalOptions
from jitr.evaluation.positives import PositiveSets, positives_from_lists
from jitr.evaluation.suite import evaluate_retrieval
from jitr.models import RetrievalModel
from jitr.training.score_split import SplitScorer

# The K of the recall and NDCG curves every evaluation reports.
CURVE_KS = (1, 5, 10, 20, 50, 100)
# The K of NCS@K and Semantic Recall@K (SAM's tables), reported when semantic scores are given.
SEMANTIC_KS = (1, 5, 10)


def evaluation_options(folds: int | None) -> EvalOptions:
  """What every evaluation of a run reports: recall and NDCG curves at ``CURVE_KS``, no
  NCS / Semantic Recall, and ``folds`` contiguous folds (None: none)."""
  return EvalOptions(curve_ks=CURVE_KS, ndcg_ks=CURVE_KS, semantic_ks=(), folds=folds)


def exact_graded_inputs(relevance: np.ndarray) -> dict:
  """``evaluate_retrieval``'s graded inputs from a split's exact relevance ``[N_img, N_cap]``:
  the relevance itself, and its relevance-1 items as the extended positives ``exact``."""
  ones = relevance >= 1.0
  return {
    "relevance": relevance,
    "extended_positives": {
      "exact": (
        positives_from_lists([np.flatnonzero(r) for r in ones], num_gallery=relevance.shape[1]),
        positives_from_lists([np.flatnonzero(c) for c in ones.T], num_gallery=relevance.shape[0]),
      )
    },
  }


class Evaluator:
  """``evaluator(split, variables) -> metrics``: the split's similarity matrix under a
  ``RetrievalModel`` (:class:`jitr.training.score_split.SplitScorer`: each item encoded
  once, pairs scored in ``batch_size`` x ``batch_size`` blocks; embedding models by a dot
  product, similarity models by their ``score``) and
  :func:`jitr.evaluation.evaluate_retrieval` (exact relevance and its relevance-1 items as
  extended positives where the dataset has them; the class MAP of both directions over the
  whole split where its images have class labels, CMAL²R's protocol; COCO folds on
  test). ``variables``: a state's ``state.variables``. ``show_progress``: scoring a large
  split draws one progress line on stderr (``scoring SPLIT: pairs done of the total,
  pairs/s, ETA``; see :mod:`!jitr.training.score_split`)."""

  def __init__(
    self,
    model: RetrievalModel,
    splits: dict,
    exact: dict | None,
    folds: int | None,
    *,
    batch_size: int,
    show_progress: bool = False,
  ):
    self.splits, self.exact, self.folds = splits, exact, folds
    # COCO folds on test only
    self.options, self.test_options = evaluation_options(None), evaluation_options(folds)
    self._graded: dict[str, dict] = {}  # per split, built once (validation runs every epoch)
    self.scorer = SplitScorer(
      model, image_batch=batch_size, caption_batch=batch_size, show_progress=show_progress
    )

  def similarity(self, split: str, variables: Any, *, official: bool = False) -> np.ndarray:
    """``sim [N_img, N_cap]`` (float32 numpy) of ``split`` under ``variables``; ``official``:
    the official evaluation's matrix (float64 for a model with an ``eval_similarity``, CVSE:
    :class:`jitr.training.score_split.SplitScorer`)."""
    return self.scorer(variables, self.splits[split], label=f"scoring {split}", official=official)

  def _graded_inputs(self, split: str) -> dict:
    if self.exact is None:
      return {}
    if split not in self._graded:
      self._graded[split] = exact_graded_inputs(self.exact[split])
    return self._graded[split]

  def __call__(
    self,
    split: str,
    variables: Any,
    sim: np.ndarray | None = None,
    semantic: np.ndarray | None = None,
    extended: Mapping[str, tuple[PositiveSets, PositiveSets]] | None = None,
  ) -> dict:
    """The metrics of ``split`` (``rsum``: ``full/rsum``); ``sim`` given: scored as is.
    ``semantic``: ``phi [N_img, N_cap]`` semantic scores, adding ``semantic/{d}/NCS@K`` and
    ``SR@K`` at :data:`SEMANTIC_KS` (SAM's NCS and Semantic Recall, N = 1). ``extended``:
    more positive sets by name (``{name: (i2t, t2i)}``, e.g. ECCV Caption's), adding
    ``{name}/{d}/R@K``, ``mAP@R`` and ``R-P``."""
    sim = self.similarity(split, variables) if sim is None else sim
    options = self.test_options if split == "test" else self.options
    inputs = self._graded_inputs(split)
    if semantic is not None:
      options = dataclasses.replace(options, semantic_ks=SEMANTIC_KS)
      inputs = {**inputs, "semantic": semantic}
    if extended:
      sets = {**inputs.get("extended_positives", {}), **extended}
      inputs = {**inputs, "extended_positives": sets}
    labels = self.splits[split].class_labels  # captions: their image's
    metrics = evaluate_retrieval(
      sim,
      caption_to_image=self.splits[split].caption_image,
      labels=None if labels is None else ClassLabels(labels),
      options=options,
      **inputs,
    )
    metrics["rsum"] = metrics["full/rsum"]
    return metrics
