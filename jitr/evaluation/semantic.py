"""NCS@K and Semantic Recall@K (Biten et al., "Is an Image Worth Five
Sentences?", WACV 2022 -- the SAM paper).

Both look past the annotated pairs: the annotated positives of each query are
removed from the model's ranking ``pi'`` and from the ideal ranking ``pi*``
(the gallery sorted by semantic score ``phi``, e.g. CIDEr of a caption with
respect to an image's reference captions), as in the authors' reference code
(``include_anns=False``).

    NCS@K = sum_q sum_{i<=K} phi_q(pi'_q(i)) / sum_q sum_{i<=K} phi_q(pi*_q(i))

(the ratio of the mean retrieved semantic score to the mean ideal one, the
``softer`` score of the reference code), and with ``S_q`` the ``N`` items with
the highest ``phi_q`` (``pi*_q(1..N)``):

    SR@K = (1/Q) sum_q [ pi'_q(1..K) intersects S_q ]

(the ``hard`` / ``vse_recall`` score with threshold ``N``), over all queries.
The reference code builds ``S_q`` of an image query from image-to-image
similarity (pooling the CIDEr of its five captions) and counts every caption
of those images; here ``S_q`` is read directly off the given ``phi`` matrix,
so the caller encodes such pooling in ``phi`` if the exact original protocol
is wanted. Ties in ``phi`` are broken by the lower gallery index.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jitr.evaluation.checks import check_ks
from jitr.evaluation.engine import SweepConfig, SweepData, sweep
from jitr.evaluation.positives import PositiveSets
from jitr.evaluation.sources import as_scores, scores_like

__all__ = ["ncs_at", "semantic_metrics", "summarize_semantic"]


def ncs_at(num: np.ndarray, den: np.ndarray, ks: Sequence[int]) -> dict[str, float]:
  """``{"NCS@K": Σ_q num[q, K−1] / Σ_q den[q, K−1]}`` (NaN when the denominator is 0)
  from the ``(Q, k)`` cumulative retrieved / ideal semantic scores."""
  out = {}
  for k in ks:
    d = den[:, int(k) - 1].sum()
    out[f"NCS@{k}"] = float(num[:, int(k) - 1].sum() / d) if d > 0 else float("nan")
  return out


def summarize_semantic(
  num: np.ndarray, den: np.ndarray, hit: np.ndarray, ks: Sequence[int]
) -> dict[str, float]:
  """``NCS@K`` and ``SR@K`` (fractions) from the ``(Q, k)`` per-query curves."""
  out = {}
  ncs = ncs_at(num, den, ks)
  for k in ks:
    out[f"NCS@{k}"] = ncs[f"NCS@{k}"]
    out[f"SR@{k}"] = float(np.mean(hit[:, int(k) - 1])) if hit.shape[0] else float("nan")
  return out


def check_semantic_k(k: int, n: int, positives: PositiveSets, num_gallery: int):
  if max(k, n) + positives.max_positives > num_gallery:
    raise ValueError(
      f"NCS/Semantic Recall need K (= {k}) and `num_relevant` (= {n}) plus the "
      f"{positives.max_positives} annotated positives to fit in the gallery of "
      f"{num_gallery} items"
    )


def semantic_metrics(
  scores,
  semantic,
  positives: PositiveSets,
  *,
  ks: Sequence[int] = (1, 5, 10),
  num_relevant: int = 1,
  chunk_size: int | None = None,
) -> dict[str, float]:
  """One direction's NCS@K and SR@K.

  Args:
    scores: ``(Q, G)`` model scores.
    semantic: ``(Q, G)`` semantic scores ``phi >= 0`` (array or Scores source).
    positives: annotated positives, removed from both rankings.
    ks: cut-offs.
    num_relevant: ``N``, the size of each query's semantically relevant set.

  >>> import numpy as np
  >>> from jitr.evaluation.positives import positives_from_lists
  >>> scores = np.array([[0.9, 0.1, 0.8, 0.5, 0.7, 0.2]])
  >>> phi = np.array([[5.0, 0.0, 1.0, 3.0, 2.0, 4.0]])  # item 0: annotated positive
  >>> m = semantic_metrics(scores, phi, positives_from_lists([[0]], num_gallery=6), ks=(2,))
  >>> print(round(m["NCS@2"], 4), m["SR@2"])  # (1 + 2) / (4 + 3); item 5 not in top 2
  0.4286 0.0
  """
  src = as_scores(scores)
  sem = scores_like(semantic, src, "semantic")
  ks = check_ks(ks)
  if num_relevant < 1:
    raise ValueError(f"`num_relevant` must be >= 1, got {num_relevant}")
  k = max(ks)
  check_semantic_k(k, num_relevant, positives, src.num_gallery)
  res = sweep(
    src,
    positives,
    cfg=SweepConfig(semantic_k=k, semantic_n=int(num_relevant)),
    data=SweepData(semantic=sem),
    chunk_size=chunk_size,
  )
  return summarize_semantic(res.ncs_num, res.ncs_den, res.sr_hit, ks)
