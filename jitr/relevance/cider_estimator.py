"""CIDEr-D as a relevance estimator (SAM's ``phi(G_i, c)``).

Fitting PTB-tokenizes every caption and computes document frequencies over the
dataset's images (each image's reference set is one document, ``N = N_img``).
``phi(G_i, c_j)`` is then CIDEr-D of caption ``j`` against image ``i``'s
references (see :mod:`jitr.relevance.cider`), for all ``i, j`` in blocks. Scores
lie in ``[0, 10]``; relevance = ``clip(phi / 10, 0, 1)``.

:meth:`CiderEstimator.pair_scores` follows pycocoevalcap instead: the document
frequencies come from the reference sets being scored (one per pair), which is
the protocol of the caption-metric literature.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.cider import CiderD, EncodedSentences, PreparedCandidates, cider_d
from jitr.relevance.estimator import RelevanceEstimator
from jitr.relevance.tokenize import ptb_tokenize


class CiderEstimator(RelevanceEstimator):
  """CIDEr-D relevance lists.

  Args:
    n: largest n-gram order (4).
    sigma: standard deviation of the Gaussian length penalty (6).
  """

  name = "cider"
  relevance_kind = "score"
  relevance_scale = 10.0

  def __init__(self, n: int = 4, sigma: float = 6.0) -> None:
    super().__init__()
    self.n = n
    self.sigma = sigma
    self._scorer: CiderD | None = None
    self._encoded: EncodedSentences | None = None
    self._prepared: PreparedCandidates | None = None

  def params(self) -> dict[str, Any]:
    return {"n": self.n, "sigma": self.sigma, "tokenizer": "ptb", "idf": "dataset images"}

  def fit(self, captions: CaptionSet) -> CiderEstimator:
    self._captions = captions
    tokens = [ptb_tokenize(c) for c in captions.captions]
    off = captions.image_offsets
    self._scorer = CiderD(self.n, self.sigma).fit(
      [tokens[off[i] : off[i + 1]] for i in range(captions.num_images)]
    )
    self._encoded = self._scorer.encode(tokens)
    self._prepared = self._scorer.prepare_candidates(self._encoded)
    return self

  def image_score_blocks(
    self, images: np.ndarray, images_per_block: int = 64
  ) -> Iterator[tuple[int, int, np.ndarray]]:
    if self._scorer is None:
      raise RuntimeError("CiderEstimator is not fitted: call fit(captions) first")
    images = np.asarray(images, dtype=np.int64)
    off = self.captions.image_offsets
    for lo in range(0, len(images), images_per_block):
      block = images[lo : lo + images_per_block]
      rows = np.concatenate([np.arange(off[i], off[i + 1]) for i in block])
      sizes = off[block + 1] - off[block]
      ref_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
      scores = self._scorer.score_block(self._prepared, self._encoded.rows(rows), ref_offsets)
      yield lo, lo + len(block), scores.T

  def pair_scores(
    self, candidates: Sequence[str], reference_sets: Sequence[Sequence[str]]
  ) -> np.ndarray:
    """pycocoevalcap's CIDEr-D of raw-text pairs (PTB-tokenized; idf over ``reference_sets``)."""
    cands = [ptb_tokenize(c) for c in candidates]
    refs = [[ptb_tokenize(r) for r in rs] for rs in reference_sets]
    return cider_d(cands, refs, n=self.n, sigma=self.sigma)
