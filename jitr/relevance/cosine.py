"""Estimators whose relevance is a cosine of per-caption vectors (RSC-style).

With unit-norm vectors ``v`` of every caption::

    r(V_i, T_j) = (1 + max_k cos(v(T_i^k), v(T_j))) / 2        (aggregate="max", the default)
    r(V_i, T_j) = (1 + mean_k cos(v(T_i^k), v(T_j))) / 2       (aggregate="mean")

(``pair_scores`` also takes ``aggregate="smooth_max"``: ``T log mean_k exp(cos_k / T)``,
T = 0.05, reported by the agreement tool.)

over the reference captions ``T_i^k`` of image ``i``. A text without features
(e.g. only stop words for LSA) has the zero vector: its cosines are 0.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence

import numpy as np

from jitr.losses.relevance import AGGREGATES  # the same choices as the in-batch matrices
from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.estimator import RelevanceEstimator

SMOOTH_MAX_TEMPERATURE = 0.05


def unit_rows(x: np.ndarray) -> np.ndarray:
  """Rows of ``x`` scaled to unit L2 norm (zero rows stay zero), float32.

  >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).astype(float).round(2).tolist()
  [[0.6, 0.8], [0.0, 0.0]]
  """
  x = np.asarray(x, dtype=np.float32)
  norm = np.linalg.norm(x, axis=1, keepdims=True)
  return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)


def aggregate_cosines(
  cos: np.ndarray, segment_starts: np.ndarray, aggregate: str, axis: int
) -> np.ndarray:
  """Max or mean of ``cos`` over contiguous segments along ``axis`` (segments start at
  ``segment_starts``).

  >>> cos, starts = np.array([0.2, 0.8, 0.5, -0.1]), np.array([0, 2])  # segments [0:2], [2:4]
  >>> aggregate_cosines(cos, starts, "max", axis=0).tolist()
  [0.8, 0.5]
  >>> aggregate_cosines(cos, starts, "mean", axis=0).tolist()
  [0.5, 0.2]
  """
  if aggregate == "max":
    return np.maximum.reduceat(cos, segment_starts, axis=axis)
  if aggregate == "mean":
    sums = np.add.reduceat(cos, segment_starts, axis=axis)
    ends = np.append(segment_starts[1:], cos.shape[axis])
    sizes = (ends - segment_starts).astype(cos.dtype)
    shape = [1] * cos.ndim
    shape[axis] = -1
    return sums / sizes.reshape(shape)
  if (
    aggregate == "smooth_max"
  ):  # log-mean-exp with temperature T: between mean (T -> inf) and max (T -> 0)
    t = SMOOTH_MAX_TEMPERATURE
    top = np.maximum.reduceat(cos, segment_starts, axis=axis)
    shape = [1] * cos.ndim
    shape[axis] = -1
    counts = np.diff(np.append(segment_starts, cos.shape[axis])).reshape(shape)
    rep = np.repeat(top, counts.ravel(), axis=axis)
    sums = np.add.reduceat(np.exp((cos - rep) / t), segment_starts, axis=axis)
    return top + t * np.log(sums / counts)
  raise ValueError(f"unknown aggregate {aggregate!r} (expected one of {AGGREGATES} or smooth_max)")


class CosineEstimator(RelevanceEstimator):
  """Base of the cosine estimators; subclasses implement :meth:`embed`."""

  relevance_kind = "cosine"
  relevance_scale = 1.0

  def __init__(self, aggregate: str = "max") -> None:
    super().__init__()
    if aggregate not in AGGREGATES:
      raise ValueError(f"unknown aggregate {aggregate!r} (expected one of {AGGREGATES})")
    self.aggregate = aggregate
    self._vectors: np.ndarray | None = None

  @abc.abstractmethod
  def embed(self, texts: Sequence[str]) -> np.ndarray:
    """``[n, D]`` float32 unit-norm (or zero) vectors of raw texts."""

  def fit(self, captions: CaptionSet) -> CosineEstimator:
    self._captions = captions
    self._vectors = None
    return self

  def all_vectors(self) -> np.ndarray:
    """``[N_cap, D]`` vectors of every caption of the fitted dataset (computed once)."""
    if self._vectors is None:
      self._vectors = self.embed(list(self.captions.captions))
    return self._vectors

  def caption_vectors(self, caption_indices: np.ndarray) -> np.ndarray:
    caption_indices = np.asarray(caption_indices, dtype=np.int64)
    if self._vectors is not None:
      return self._vectors[caption_indices]
    caps = self.captions.captions
    return self.embed([caps[j] for j in caption_indices])

  def image_score_blocks(
    self, images: np.ndarray, images_per_block: int = 64
  ) -> Iterator[tuple[int, int, np.ndarray]]:
    vectors = self.all_vectors()
    offsets = self.captions.image_offsets
    images = np.asarray(images, dtype=np.int64)
    for lo in range(0, len(images), images_per_block):
      block = images[lo : lo + images_per_block]
      sizes = offsets[block + 1] - offsets[block]
      rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in block])
      cos = vectors[rows] @ vectors.T  # [refs of block, N_cap]
      starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
      agg = aggregate_cosines(cos.astype(np.float64), starts, self.aggregate, axis=0)
      yield lo, lo + len(block), np.clip((1.0 + agg) / 2.0, 0.0, 1.0)

  def pair_scores(
    self,
    candidates: Sequence[str],
    reference_sets: Sequence[Sequence[str]],
    aggregate: str | None = None,
  ) -> np.ndarray:
    """``(1 + agg_k cos(v(ref_k), v(cand)))/2`` per pair; texts are embedded once each."""
    if len(candidates) != len(reference_sets):
      raise ValueError(
        f"pair_scores: {len(candidates)} candidates for {len(reference_sets)} reference sets"
      )
    aggregate = aggregate or self.aggregate
    texts = tuple(sorted(set(candidates) | {r for refs in reference_sets for r in refs}))
    where = {t: i for i, t in enumerate(texts)}
    cached = getattr(self, "_pair_cache", None)
    if cached is None or cached[0] != texts:  # max and mean over the same pairs embed once
      self._pair_cache = (texts, self.embed(list(texts)).astype(np.float64))
    vecs = self._pair_cache[1]
    sizes = np.array([len(r) for r in reference_sets], np.int64)
    if np.any(sizes == 0):
      raise ValueError(
        f"pair_scores: reference set {int(np.argmin(sizes))} is empty (expected >= 1 reference)"
      )
    ref_rows = np.array([where[r] for refs in reference_sets for r in refs], np.int64)
    cand_rows = np.repeat(np.array([where[c] for c in candidates], np.int64), sizes)
    cos = np.einsum("pd,pd->p", vecs[ref_rows], vecs[cand_rows])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return np.clip((1.0 + aggregate_cosines(cos, starts, aggregate, axis=0)) / 2.0, 0.0, 1.0)
