"""Retrieval and ranking metrics on any similarity matrix, reports and plots.

Pure functions of a similarity matrix (or a block source of one) and ground
truth; nothing here imports models, data, training or apps. Start with
:func:`evaluate_retrieval`, which computes the full metric set in one sweep
per direction and returns a flat ``{name: float}`` dict; :class:`EvalOptions`
says which metrics and how.
"""

from jitr.evaluation.class_map import ClassLabels, as_multihot, class_map
from jitr.evaluation.coco import coco_recalls
from jitr.evaluation.eccv import extended_metrics
from jitr.evaluation.ensemble import mean_similarity
from jitr.evaluation.folds import contiguous_folds
from jitr.evaluation.ndcg import ndcg_at_k
from jitr.evaluation.official import (
  official_fold5_recall,
  official_i2t_ranks,
  official_recall,
  official_t2i_ranks,
)
from jitr.evaluation.options import EvalOptions
from jitr.evaluation.positives import (
  PositiveSets,
  positives_from_id_dicts,
  positives_from_lists,
  positives_from_owner,
)
from jitr.evaluation.ranks import best_positive_ranks
from jitr.evaluation.recall import (
  mean_rank,
  mean_recall,
  median_rank,
  recall_at_k,
  retrieval_recall,
  rsum,
)
from jitr.evaluation.semantic import semantic_metrics
from jitr.evaluation.sources import CallableScores, DenseScores, EmbeddingScores, Scores
from jitr.evaluation.suite import CrossModalScores, evaluate_retrieval

__all__ = [
  "CallableScores",
  "ClassLabels",
  "CrossModalScores",
  "DenseScores",
  "EmbeddingScores",
  "EvalOptions",
  "PositiveSets",
  "Scores",
  "as_multihot",
  "best_positive_ranks",
  "class_map",
  "coco_recalls",
  "contiguous_folds",
  "evaluate_retrieval",
  "extended_metrics",
  "mean_rank",
  "mean_recall",
  "mean_similarity",
  "median_rank",
  "ndcg_at_k",
  "official_fold5_recall",
  "official_i2t_ranks",
  "official_recall",
  "official_t2i_ranks",
  "positives_from_id_dicts",
  "positives_from_lists",
  "positives_from_owner",
  "recall_at_k",
  "retrieval_recall",
  "rsum",
  "semantic_metrics",
]
