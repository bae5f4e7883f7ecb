"""The rows of a scores file (:mod:`jitr.relevance.scores_file`) checked against a split.

A row names its image by the image's id in the caption file (a precomp ``*_caps.txt``:
its index ``0..N_img-1``; ``Flickr8k.token.txt``: its file name) or, with an image-ids
file, by the id that file gives it (line ``i + 1`` holds the id of image ``i``, e.g. the
COCO image ids of a split), and its caption by the caption's index in the split
(``0..N_cap-1``: the line of a precomp caption file, counted from 0). Every pair the file
does not name scores 0.

:func:`pair_scores` refuses, with one :class:`~jitr.relevance.scores_file.ScoresFileError`
line naming the row: an image or caption that is not one of the split's, a score that is
not finite or lies outside ``[0, scale]``, and a pair scored twice.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence

import numpy as np

from jitr import fileio, paths
from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.scores_file import ScoreRow, ScoresFileError, read_score_rows

_INDEX = re.compile(r"^\d+$")


@dataclasses.dataclass(frozen=True)
class PairScores:
  """Scores of some (image, caption) pairs of a split; every other pair scores 0.

  Attributes:
    images: ``[P]`` int64 image indices.
    captions: ``[P]`` int64 caption indices.
    scores: ``[P]`` float64 scores in ``[0, scale]``.
    num_images, num_captions: the split's size.
  """

  images: np.ndarray
  captions: np.ndarray
  scores: np.ndarray
  num_images: int
  num_captions: int

  def dense_rows(self, images: np.ndarray) -> np.ndarray:
    """``[len(images), N_cap]`` float32: ``out[b, j]`` the score of (``images[b]``, ``j``),
    0 for a pair without one.

    >>> s = PairScores(np.array([1, 0]), np.array([2, 0]), np.array([0.5, 0.25]), 2, 3)
    >>> s.dense_rows(np.array([1, 0])).tolist()
    [[0.0, 0.0, 0.5], [0.25, 0.0, 0.0]]
    """
    images = np.asarray(images, np.int64)
    row_of = np.full(self.num_images, -1, np.int64)
    row_of[images] = np.arange(len(images))
    out = np.zeros((len(images), self.num_captions), np.float32)
    keep = row_of[self.images] >= 0
    out[row_of[self.images[keep]], self.captions[keep]] = self.scores[keep]
    return out


def check_scale(scale: float) -> float:
  """``scale`` as a float when it is a finite number > 0, else ``ValueError`` naming it."""
  if isinstance(scale, bool) or not isinstance(scale, int | float) or not 0 < scale < math.inf:
    raise ValueError(f"scale={scale!r}: expected a positive number (the largest possible score)")
  return float(scale)


def read_image_ids(path: str, captions: CaptionSet) -> tuple[str, ...]:
  """The image ids of ``captions``' images from ``path``: one per line, line ``i + 1`` the id
  of image ``i``; refused (one line) unless there is one distinct id per image."""
  if not paths.isfile(path):
    raise ScoresFileError(f"{path}: no such image-ids file")
  try:
    ids = tuple(line.strip() for line in fileio.read_utf8_lines(path))
  except UnicodeError as err:
    raise ScoresFileError(str(err)) from None
  if len(ids) != captions.num_images:
    raise ScoresFileError(
      f"{path}: {len(ids)} image ids for the {captions.num_images} images of "
      f"{captions.source}; expected one id per line, line i + 1 the id of image i"
    )
  seen: dict[str, int] = {}
  for line, image_id in enumerate(ids, start=1):
    if not image_id:
      raise ScoresFileError(f"{path}:{line}: empty image id; expected one id per line")
    if image_id in seen:
      raise ScoresFileError(
        f"{path}:{line}: image id {image_id!r} repeats (line {seen[image_id]}); expected "
        "one distinct id per image"
      )
    seen[image_id] = line
  return ids


def _image_expectation(ids: Sequence[str], what: str) -> str:
  """What an image key must be: an index of the split, or one of its ids."""
  if list(ids) == [str(i) for i in range(len(ids))]:
    return f"an image index of {what}, 0..{len(ids) - 1}"
  return f"one of the {len(ids)} image ids of {what} (e.g. {ids[0]!r})"


def pair_scores(
  rows: Sequence[ScoreRow],
  captions: CaptionSet,
  *,
  scale: float = 1.0,
  image_ids: Sequence[str] | None = None,
  image_ids_source: str | None = None,
) -> PairScores:
  """The pairs of ``rows`` as indices of ``captions``' split (see the module docstring).

  Args:
    rows: a scores file's rows (:func:`~jitr.relevance.scores_file.read_score_rows`).
    captions: the split the scores are of.
    scale: the largest possible score; every score must lie in ``[0, scale]``.
    image_ids: the id of each image (default: ``captions.image_ids``).
    image_ids_source: where ``image_ids`` come from (for messages).

  >>> from jitr.relevance.captions_io import CaptionSet
  >>> caps = CaptionSet("caps.txt", ("0", "1"), ("0", "1", "2", "3"), ("a",) * 4, [0, 2, 4])
  >>> pair_scores([ScoreRow("s.csv:2", "1", "0", 0.5)], caps).images.tolist()
  [1]
  >>> pair_scores([ScoreRow("s.csv:2", "2", "0", 0.5)], caps)
  Traceback (most recent call last):
  ...
  jitr.relevance.scores_file.ScoresFileError: s.csv:2: image '2' is not an image ...; ...0..1
  """
  scale = check_scale(scale)
  ids = tuple(captions.image_ids if image_ids is None else image_ids)
  index_of = {image_id: i for i, image_id in enumerate(ids)}
  expect_image = _image_expectation(ids, image_ids_source or captions.source)
  n_cap = captions.num_captions
  images = np.empty(len(rows), np.int64)
  caps = np.empty(len(rows), np.int64)
  scores = np.empty(len(rows), np.float64)
  first: dict[tuple[int, int], str] = {}
  for p, row in enumerate(rows):
    image = index_of.get(row.image)
    if image is None:
      raise ScoresFileError(
        f"{row.where}: image {row.image!r} is not an image of {captions.source}; "
        f"expected {expect_image}"
      )
    caption = int(row.caption) if _INDEX.match(row.caption) else n_cap
    if caption >= n_cap:
      raise ScoresFileError(
        f"{row.where}: caption {row.caption!r} is not a caption of {captions.source}; "
        f"expected a caption index of the split, 0..{n_cap - 1}"
      )
    if not math.isfinite(row.score):
      raise ScoresFileError(
        f"{row.where}: score {row.score} is not finite; expected a number in [0, {scale:g}]"
      )
    if not 0.0 <= row.score <= scale:
      raise ScoresFileError(
        f"{row.where}: score {row.score:g} is outside [0, {scale:g}] (0 to the scale, the "
        "largest possible score)"
      )
    pair = (image, caption)
    if pair in first:
      raise ScoresFileError(
        f"{row.where}: the pair (image {row.image}, caption {row.caption}) is scored twice "
        f"(also at {first[pair]})"
      )
    first[pair] = row.where
    images[p], caps[p], scores[p] = image, caption, row.score
  return PairScores(images, caps, scores, captions.num_images, n_cap)


def read_pair_scores(
  path: str, captions: CaptionSet, *, scale: float = 1.0, image_ids: str | None = None
) -> PairScores:
  """The scores file ``path`` checked against ``captions`` (:func:`pair_scores`);
  ``image_ids``: a file of the images' ids (:func:`read_image_ids`), else the caption
  file's own."""
  scale = check_scale(scale)
  ids = read_image_ids(image_ids, captions) if image_ids else None
  return pair_scores(
    read_score_rows(path), captions, scale=scale, image_ids=ids, image_ids_source=image_ids
  )
