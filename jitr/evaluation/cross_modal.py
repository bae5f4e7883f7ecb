"""An ``(images, captions)`` score matrix readable in both retrieval directions."""

from __future__ import annotations

import dataclasses
from typing import Any

from jitr.evaluation.checks import check_sizes
from jitr.evaluation.sources import DenseScores, EmbeddingScores, Scores, as_scores

__all__ = ["DIRECTIONS", "CrossModalScores", "as_cross_modal"]

DIRECTIONS = ("i2t", "t2i")
"""Image-to-text (image queries over captions) and text-to-image."""


@dataclasses.dataclass(frozen=True)
class CrossModalScores:
  """An ``(images, captions)`` score matrix readable in both directions.

  ``i2t`` has the images as queries (``num_images x num_captions``), ``t2i``
  the captions (``num_captions x num_images``).
  """

  i2t: Scores
  t2i: Scores

  def __post_init__(self):
    if (self.i2t.num_queries, self.i2t.num_gallery) != (self.t2i.num_gallery, self.t2i.num_queries):
      raise ValueError(
        f"CrossModalScores: `i2t` is {self.i2t.num_queries} x "
        f"{self.i2t.num_gallery} but `t2i` is {self.t2i.num_queries} x "
        f"{self.t2i.num_gallery}; expected transposed shapes"
      )

  @property
  def num_images(self) -> int:
    return self.i2t.num_queries

  @property
  def num_captions(self) -> int:
    return self.i2t.num_gallery

  @classmethod
  def from_matrix(cls, matrix: Any) -> CrossModalScores:
    """From a dense ``(num_images, num_captions)`` array (numpy, memmap, jax)."""
    src = as_scores(matrix, name="sim")
    return cls(src, DenseScores(src.matrix, transpose=True))

  @classmethod
  def from_embeddings(cls, images: Any, captions: Any) -> CrossModalScores:
    """``s_ij = <image_i, caption_j>`` computed per block (bounded memory)."""
    src = EmbeddingScores(images, captions)
    return cls(src, src.transposed())

  def direction(self, name: str) -> Scores:
    """The ``"i2t"`` or ``"t2i"`` reading."""
    return self.i2t if name == "i2t" else self.t2i


def as_cross_modal(x: Any, name: str, shape: tuple[int, int] | None = None) -> CrossModalScores:
  """``x`` (a 2-D array or a :class:`CrossModalScores`), checked against ``shape`` of `sim`."""
  if isinstance(x, CrossModalScores):
    out = x
  else:
    xs = getattr(x, "shape", None)
    if xs is None or len(xs) != 2:
      raise ValueError(
        f"`{name}` must be a 2-D (num_images, num_captions) array or a "
        f"CrossModalScores, got shape {xs}"
      )
    out = CrossModalScores.from_matrix(x)
  if shape is not None:
    check_sizes(name, (out.num_images, out.num_captions), shape, "sim")
  return out
