"""jitr.losses: pure, jit/vmap-compatible losses on a similarity matrix.

Every loss takes ``sim [N_img, N_txt]`` (rows: image queries, columns: caption
candidates), optional ``positives`` (bool, annotated pairs) and ``where`` (bool,
valid pairs), computes image->text on rows and text->image on columns, and
returns a scalar (or per-query values with ``reduction="none"``).

:mod:`jitr.losses.query_rows` holds what every loss shares: ``QueryRows``, the masks, the
two directions, the reduction rule and ``QueryLoss``, which makes a loss from the formula of
one query. Each loss is that formula, with its hyper-parameters' defaults in its signature
and their ranges declared beside it, in a module named for its function (``triplet``,
``smooth_ndcg``, ``adaptive_listwise``, ``semantic_margin_triplet``,
``semantic_hard_negatives``, CLIP's ``info_nce`` and SigLIP's ``sigmoid_pairs``;
``triplet_sndcg`` is Listwise ITR's whole objective); the exported function and the core on
query rows are derived from it. The exported function hides its module of the same name as
an attribute of this package: reach the module's other names with
``from jitr.losses.triplet import triplet_queries``.
"""

from jitr.losses.adaptive_listwise import adaptive_listwise, rank_adaptive_margins
from jitr.losses.calibration import calibrate, parse_calibration
from jitr.losses.composite import LOSSES, objective
from jitr.losses.dcg import ndcg
from jitr.losses.info_nce import info_nce
from jitr.losses.normalize import l2_normalize, l2_normalize_additive
from jitr.losses.query_rows import DirectionalLoss, pair_mask
from jitr.losses.ranks import approx_ranks, approx_ranks_of, exact_ranks
from jitr.losses.relevance import (
  arithmetic_mean_relevance,
  harmonic_mean_relevance,
  reference_cosine,
  relevance_from_embeddings,
  relevance_from_labels,
  relevance_from_pair_embeddings,
  relevance_from_token_coverage,
  relevance_from_topk,
  shares_a_label,
  topk_score_matrix,
)
from jitr.losses.saturation_window import unsaturated_partners, window_ranks
from jitr.losses.semantic_hard_negatives import semantic_hard_negatives
from jitr.losses.semantic_margin_triplet import semantic_margin_triplet
from jitr.losses.sigmoid_pairs import sigmoid_pairs
from jitr.losses.smooth_ndcg import smooth_ndcg
from jitr.losses.triplet import triplet

__all__ = [
  "DirectionalLoss",
  "LOSSES",
  "adaptive_listwise",
  "approx_ranks",
  "approx_ranks_of",
  "arithmetic_mean_relevance",
  "calibrate",
  "exact_ranks",
  "harmonic_mean_relevance",
  "info_nce",
  "l2_normalize",
  "l2_normalize_additive",
  "ndcg",
  "objective",
  "pair_mask",
  "parse_calibration",
  "rank_adaptive_margins",
  "reference_cosine",
  "relevance_from_embeddings",
  "relevance_from_labels",
  "relevance_from_pair_embeddings",
  "relevance_from_token_coverage",
  "relevance_from_topk",
  "semantic_hard_negatives",
  "semantic_margin_triplet",
  "shares_a_label",
  "sigmoid_pairs",
  "smooth_ndcg",
  "topk_score_matrix",
  "triplet",
  "unsaturated_partners",
  "window_ranks",
]
