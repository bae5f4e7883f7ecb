"""The common interface of relevance estimators, and top-K selection.

An estimator is fitted on a dataset's captions (:class:`CaptionSet`: every image
with its reference captions). It then gives

* ``image_score_blocks`` -- the score of *every* caption of the dataset for
  blocks of images (``[B, N_cap]``), from which :meth:`top_k` keeps the K best
  per image (sparse relevance lists, for any estimator);
* ``caption_vectors`` -- per-caption vectors, for estimators that store them
  (:attr:`~RelevanceEstimator.stores_vectors`): unit-norm for those whose relevance is
  a cosine (``relevance_kind == "cosine"``):
  ``r(V_i, T_j) = (1 + max_k cos(v(T_i^k), v(T_j))) / 2``; token-coverage profiles for
  ``"coverage"`` (:mod:`jitr.relevance.token_coverage`);
* ``pair_scores`` -- the score of free-text candidates against free-text
  reference sets (used to measure agreement with human judgments).

Scores map to relevance in ``[0, 1]`` by ``clip(score / relevance_scale, 0, 1)``:
``relevance_scale`` is 1 for the cosine estimators (their score already is
``(1 + max cos) / 2``) and 10 for CIDEr-D (whose maximum is 10); the records header
stores it and ``jitr.losses.relevance_from_topk`` applies it.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from jitr.relevance.captions_io import CaptionSet

VECTOR_KINDS = ("cosine", "coverage")  # relevance kinds read from per-caption vectors


@dataclasses.dataclass(frozen=True)
class TopK:
  """Top-K relevance lists of some images.

  Attributes:
    indices: ``[n, K]`` int64 caption indices, best first.
    scores: ``[n, K]`` float32 scores (descending; ties by ascending caption index).
  """

  indices: np.ndarray
  scores: np.ndarray


def select_top_k(scores: np.ndarray, k: int) -> TopK:
  """The ``k`` largest entries of each row of ``scores`` ``[B, N]``, best first.

  Ties are broken by the smaller column index, so the result is deterministic.

  >>> top = select_top_k(np.array([[0.1, 0.9, 0.9, 0.5]]), 3)
  >>> top.indices.tolist(), top.scores.astype(float).round(2).tolist()
  ([[1, 2, 3]], [[0.9, 0.9, 0.5]])
  """
  scores = np.asarray(scores)
  b, n = scores.shape
  if not 1 <= k <= n:
    raise ValueError(f"top_k={k} must be between 1 and the number of captions ({n})")
  if k < n:
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    # entries tied with the k-th value may be cut arbitrarily by argpartition:
    # take all columns >= the k-th value, then order them deterministically
    kth = np.take_along_axis(scores, part, axis=1).min(axis=1)
    out_idx = np.empty((b, k), np.int64)
    for row in range(b):
      cand = np.flatnonzero(scores[row] >= kth[row])
      order = np.lexsort((cand, -scores[row, cand]))[:k]
      out_idx[row] = cand[order]
  else:
    cols = np.broadcast_to(np.arange(n), (b, n))
    out_idx = np.stack([np.lexsort((cols[r], -scores[r])) for r in range(b)]).astype(np.int64)
  return TopK(out_idx, np.take_along_axis(scores, out_idx, axis=1).astype(np.float32))


class RelevanceEstimator(abc.ABC):
  """Base class of the relevance estimators (see the module docstring)."""

  name: ClassVar[str]
  relevance_scale: ClassVar[float]
  # what the relevance is: "cosine" (RSC) or "coverage" (token coverage), both of
  # per-caption vectors, or "score" (image-caption scores, stored as top-K lists)
  relevance_kind: ClassVar[str]
  # the frozen dataclass of the estimator's settings when its constructor takes them as
  # one (``cls(settings_type(**settings))``); None: its keyword arguments are the settings
  settings_type: ClassVar[type | None] = None

  @property
  def stores_vectors(self) -> bool:
    """Whether the estimator has per-caption vectors to store (``caption_vectors``)."""
    return self.relevance_kind in VECTOR_KINDS

  def __init__(self) -> None:
    self._captions: CaptionSet | None = None

  @contextlib.contextmanager
  def reporting_to(self, callback: Callable[[int, int], None]) -> Iterator[None]:
    """Within the block, ``callback(done, total)`` after each piece of the estimator's
    current work (a batch of texts encoded, a block of images scored; ``total`` the
    pieces' size in all), so a long call can show its progress."""
    previous = getattr(self, "_report_to", None)
    self._report_to = callback
    try:
      yield
    finally:
      self._report_to = previous

  def report_progress(self, done: int, total: int) -> None:
    """Tells the callback of :meth:`reporting_to` (if any) that ``done`` of ``total`` are done."""
    callback = getattr(self, "_report_to", None)
    if callback is not None:
      callback(int(done), int(total))

  @property
  def captions(self) -> CaptionSet:
    if self._captions is None:
      raise RuntimeError(f"{type(self).__name__} is not fitted: call fit(captions) first")
    return self._captions

  @abc.abstractmethod
  def params(self) -> dict[str, Any]:
    """JSON-able description: model and hyper-parameters (known before ``fit``)."""

  @property
  def model(self) -> str | None:
    """The model name or path, for estimators that use one."""
    return None

  @abc.abstractmethod
  def fit(self, captions: CaptionSet) -> RelevanceEstimator:
    """Fit on a dataset's captions; returns ``self``."""

  @abc.abstractmethod
  def image_score_blocks(
    self, images: np.ndarray, images_per_block: int = 64
  ) -> Iterator[tuple[int, int, np.ndarray]]:
    """``(lo, hi, scores)``: ``scores[b, j]`` = score of caption ``j`` for image
    ``images[lo + b]``."""

  @abc.abstractmethod
  def pair_scores(
    self, candidates: Sequence[str], reference_sets: Sequence[Sequence[str]]
  ) -> np.ndarray:
    """Score of ``candidates[p]`` against the references ``reference_sets[p]`` (raw texts)."""

  def caption_vectors(self, caption_indices: np.ndarray) -> np.ndarray:
    """``[n, D]`` float32 vectors of the given captions (``stores_vectors`` estimators only)."""
    raise NotImplementedError(f"the {self.name} estimator has no per-caption vectors")

  def image_scores(self, images: np.ndarray) -> np.ndarray:
    """``[len(images), N_cap]`` scores of every caption for the given images."""
    images = np.asarray(images, dtype=np.int64)
    blocks = [s for _, _, s in self.image_score_blocks(images)]
    return np.concatenate(blocks, axis=0) if blocks else np.zeros((0, self.captions.num_captions))

  def top_k(self, images: np.ndarray, k: int, images_per_block: int = 64) -> TopK:
    """The ``k`` best captions (of the whole dataset) for each of ``images``."""
    images = np.asarray(images, dtype=np.int64)
    k = int(k)
    n_cap = self.captions.num_captions
    if not 1 <= k <= n_cap:
      raise ValueError(f"top_k={k} must be between 1 and the number of captions ({n_cap})")
    idx = np.zeros((len(images), k), np.int64)
    val = np.zeros((len(images), k), np.float32)
    for lo, hi, scores in self.image_score_blocks(images, images_per_block):
      block = select_top_k(scores, k)
      idx[lo:hi], val[lo:hi] = block.indices, block.scores
      self.report_progress(hi, len(images))
    return TopK(idx, val)
