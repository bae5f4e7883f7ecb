"""Scores computed elsewhere (e.g. SPICE, which needs Java and Stanford CoreNLP) as a
relevance estimator, so that they are stored as the top-K records of any other estimator.

:class:`ExternalScores` is "fitted" by reading its scores file against the caption set
(:func:`jitr.relevance.pair_scores.read_pair_scores`: every problem one line, before
anything is written); its score of a pair is the file's, 0 for a pair the file does not
name, and relevance = ``clip(score / scale, 0, 1)`` as for every estimator (``scale``: 1
for SPICE's F-score in [0, 1]). Its ``name`` is the one the scores are stored under (the
header's ``estimator``, read back as ``topk:NAME``); its ``params`` hold the sha256 of the
files, so a re-run with another file is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.checksums import file_sha256
from jitr.relevance.estimator import RelevanceEstimator
from jitr.relevance.pair_scores import PairScores, check_scale, read_pair_scores
from jitr.relevance.scores_file import scores_format

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def check_scores_name(name: str, reserved: Sequence[str] = ()) -> str:
  """``name`` when it can name stored scores: a letter, then letters, digits, ``_`` or
  ``-``, and none of ``reserved`` (the estimators jitr computes itself).

  >>> check_scores_name("spice")
  'spice'
  >>> check_scores_name("cider", reserved=("cider",))
  Traceback (most recent call last):
  ...
  ValueError: scores name 'cider' is an estimator jitr computes; name scores ... (e.g. 'spice')
  """
  if not _NAME.match(name or ""):
    raise ValueError(
      f"scores name {name!r}: expected a letter, then letters, digits, '_' or '-' (e.g. 'spice')"
    )
  if name in reserved:
    raise ValueError(
      f"scores name {name!r} is an estimator jitr computes; name scores computed elsewhere "
      "otherwise (e.g. 'spice')"
    )
  return name


class ExternalScores(RelevanceEstimator):
  """The scores of a file, as an estimator of relevance lists (``relevance_kind="score"``).

  Args:
    name: the name the scores are stored under (``spice``).
    path: the scores file (:mod:`!jitr.relevance.scores_file`).
    scale: the largest possible score (relevance = score / scale).
    image_ids: a file of the images' ids, when the scores file names images by ids other
      than the caption file's (:func:`!jitr.relevance.pair_scores.read_image_ids`).
  """

  relevance_kind = "score"

  def __init__(
    self, name: str, path: str, *, scale: float = 1.0, image_ids: str | None = None
  ) -> None:
    super().__init__()
    self.name = check_scores_name(name)
    self.path, self.image_ids = path, image_ids or None
    self.relevance_scale = check_scale(scale)
    self._scores: PairScores | None = None

  def params(self) -> dict[str, Any]:
    return {
      "source": "external",
      "format": scores_format(self.path),
      "scores_sha256": file_sha256(self.path),
      "image_ids_sha256": file_sha256(self.image_ids) if self.image_ids else None,
      "scale": self.relevance_scale,
    }

  def fit(self, captions: CaptionSet) -> ExternalScores:
    self._scores = read_pair_scores(
      self.path, captions, scale=self.relevance_scale, image_ids=self.image_ids
    )
    self._captions = captions
    return self

  @property
  def scores(self) -> PairScores:
    if self._scores is None:
      raise RuntimeError("ExternalScores is not fitted: call fit(captions) first")
    return self._scores

  def image_score_blocks(
    self, images: np.ndarray, images_per_block: int = 64
  ) -> Iterator[tuple[int, int, np.ndarray]]:
    images = np.asarray(images, dtype=np.int64)
    for lo in range(0, len(images), images_per_block):
      block = images[lo : lo + images_per_block]
      yield lo, lo + len(block), self.scores.dense_rows(block)

  def pair_scores(
    self, candidates: Sequence[str], reference_sets: Sequence[Sequence[str]]
  ) -> np.ndarray:
    raise NotImplementedError(
      f"the {self.name} scores were computed elsewhere: they score only the pairs of their file"
    )
