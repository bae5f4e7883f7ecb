"""jitr.losses: pure, jit/vmap-compatible losses on a similarity matrix.

Every loss takes ``sim [N_img, N_txt]`` (rows: image queries, columns: caption
candidates), optional ``positives`` (bool, annotated pairs) and ``where`` (bool,
valid pairs), computes image->text on rows and text->image on columns, and
returns a scalar (or per-query values with ``reduction="none"``).
"""

from jitr.losses._masks import DirectionalLoss, pair_mask
from jitr.losses.calibration import calibrate, parse_calibration
from jitr.losses.cmal2r import adaptive_listwise, rank_adaptive_margins
from jitr.losses.composite import LOSSES, objective
from jitr.losses.dcg import ndcg
from jitr.losses.listwise_itr import smooth_ndcg
from jitr.losses.lseh import semantic_hard_negatives
from jitr.losses.normalize import l2_normalize, l2_normalize_additive
from jitr.losses.ranks import approx_ranks, exact_ranks
from jitr.losses.relevance import (
  arithmetic_mean_relevance,
  harmonic_mean_relevance,
  reference_cosine,
  relevance_from_embeddings,
  relevance_from_pair_embeddings,
  relevance_from_token_coverage,
  relevance_from_topk,
  topk_score_matrix,
)
from jitr.losses.sam import semantic_margin_triplet
from jitr.losses.vse import triplet

__all__ = [
  "DirectionalLoss",
  "LOSSES",
  "adaptive_listwise",
  "approx_ranks",
  "arithmetic_mean_relevance",
  "calibrate",
  "exact_ranks",
  "harmonic_mean_relevance",
  "l2_normalize",
  "l2_normalize_additive",
  "ndcg",
  "objective",
  "pair_mask",
  "parse_calibration",
  "rank_adaptive_margins",
  "reference_cosine",
  "relevance_from_embeddings",
  "relevance_from_pair_embeddings",
  "relevance_from_token_coverage",
  "relevance_from_topk",
  "semantic_hard_negatives",
  "semantic_margin_triplet",
  "smooth_ndcg",
  "topk_score_matrix",
  "triplet",
]
