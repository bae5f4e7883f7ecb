"""Ground truth: which gallery items are positives for each query.

A :class:`PositiveSets` stores, for ``Q`` queries, a padded ``(Q, P)`` int32
matrix of gallery indices (``-1`` = padding) and ``num_positives`` -- the size
``R`` of each query's positive set. ``R`` is usually the number of valid
indices, but may be larger: the ECCV Caption annotations name a few positives
that are not in the 5K/25K COCO test gallery; they can never be retrieved yet
still count in ``R`` for R-Precision and mAP@R (exactly as ``eccv_caption``
does). Queries with ``R == 0`` have no ground truth and are left out of every
mean.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
  "PositiveSets",
  "positives_from_lists",
  "positives_from_owner",
  "positives_from_id_dicts",
]


@dataclasses.dataclass(frozen=True)
class PositiveSets:
  """Padded positive index sets.

  Attributes:
    indices: ``(num_queries, max_positives)`` int32 gallery indices, each row's
      valid entries first and distinct, ``-1`` padding after them.
    num_positives: ``(num_queries,)`` int32, ``R`` per query (>= the number of
      valid indices in the row).
    num_gallery: the gallery size the indices refer to.
  """

  indices: np.ndarray
  num_positives: np.ndarray
  num_gallery: int

  @classmethod
  def empty(cls, num_queries: int, num_gallery: int) -> PositiveSets:
    """No positive for any query (for metrics that need no annotated positives)."""
    return cls(
      np.full((num_queries, 1), -1, np.int32), np.zeros(num_queries, np.int32), num_gallery
    )

  def __post_init__(self):
    idx = np.asarray(self.indices)
    if idx.ndim != 2 or not np.issubdtype(idx.dtype, np.integer):
      raise ValueError(
        f"PositiveSets: `indices` must be a 2-D integer array, got "
        f"shape {idx.shape} dtype {idx.dtype}"
      )
    npos = np.asarray(self.num_positives)
    if npos.shape != (idx.shape[0],):
      raise ValueError(
        f"PositiveSets: `num_positives` must have shape ({idx.shape[0]},), got {npos.shape}"
      )
    if idx.size and (idx.min() < -1 or idx.max() >= self.num_gallery):
      raise ValueError(
        f"PositiveSets: `indices` must lie in [0, {self.num_gallery}) or be -1 "
        f"padding, got values in [{idx.min()}, {idx.max()}]"
      )
    valid = (idx >= 0).sum(axis=1)
    if np.any(npos < valid):
      q = int(np.argmax(npos < valid))
      raise ValueError(
        f"PositiveSets: `num_positives[{q}]` = {npos[q]} is smaller than the "
        f"{valid[q]} valid indices of that query"
      )
    object.__setattr__(self, "indices", idx.astype(np.int32))
    object.__setattr__(self, "num_positives", npos.astype(np.int32))

  @property
  def num_queries(self) -> int:
    return int(self.indices.shape[0])

  @property
  def max_positives(self) -> int:
    return int(self.indices.shape[1])

  @property
  def has_positive(self) -> np.ndarray:
    """``(Q,)`` bool: queries with at least one retrievable positive."""
    return self.indices[:, 0] >= 0 if self.max_positives else np.zeros(self.num_queries, bool)

  def subset(self, rows: np.ndarray) -> PositiveSets:
    return PositiveSets(self.indices[rows], self.num_positives[rows], self.num_gallery)

  def dense(self) -> np.ndarray:
    """``(Q, num_gallery)`` bool mask (for tests and small problems)."""
    mask = np.zeros((self.num_queries, self.num_gallery), bool)
    q, p = np.nonzero(self.indices >= 0)
    mask[q, self.indices[q, p]] = True
    return mask


def positives_from_lists(
  lists: Sequence[Sequence[int]], *, num_gallery: int, num_positives: Sequence[int] | None = None
) -> PositiveSets:
  """Pads per-query lists of gallery indices (duplicates are dropped)."""
  uniq = [list(dict.fromkeys(int(j) for j in row)) for row in lists]
  width = max([len(r) for r in uniq] + [1])
  idx = np.full((len(uniq), width), -1, np.int32)
  for q, row in enumerate(uniq):
    idx[q, : len(row)] = row
  npos = (
    np.array([len(r) for r in uniq], np.int32)
    if num_positives is None
    else np.asarray(num_positives, np.int32)
  )
  return PositiveSets(idx, npos, int(num_gallery))


def _owner_array(caption_to_image, num_images: int | None) -> tuple[np.ndarray, int]:
  owner = np.asarray(caption_to_image)
  if owner.ndim != 1 or not np.issubdtype(owner.dtype, np.integer):
    raise ValueError(
      "`caption_to_image` must be a 1-D integer array (image index of each "
      f"caption), got shape {owner.shape} dtype {owner.dtype}"
    )
  n_img = int(owner.max()) + 1 if num_images is None else int(num_images)
  if owner.size and (owner.min() < 0 or owner.max() >= n_img):
    raise ValueError(
      f"`caption_to_image` must hold image indices in [0, {n_img}), got values "
      f"in [{owner.min()}, {owner.max()}]"
    )
  return owner.astype(np.int64), n_img


def positives_from_owner(
  caption_to_image, *, num_images: int | None = None
) -> tuple[PositiveSets, PositiveSets]:
  """The standard ground truth: each caption belongs to one image.

  Args:
    caption_to_image: ``(num_captions,)`` image index of each caption.
    num_images: number of images (default ``max + 1``).

  Returns:
    ``(i2t, t2i)``: each image's captions (sorted by index) and each caption's
    single image.

  >>> import numpy as np
  >>> i2t, t2i = positives_from_owner(np.array([1, 0, 1]))
  >>> i2t.indices
  array([[ 1, -1],
         [ 0,  2]], dtype=int32)
  >>> t2i.indices[:, 0]
  array([1, 0, 1], dtype=int32)
  """
  owner, n_img = _owner_array(caption_to_image, num_images)
  n_cap = owner.shape[0]
  counts = np.bincount(owner, minlength=n_img)
  width = max(1, int(counts.max()) if n_cap else 1)
  order = np.argsort(owner, kind="stable")
  starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
  slot = np.arange(n_cap) - starts[owner[order]]
  i2t = np.full((n_img, width), -1, np.int32)
  i2t[owner[order], slot] = order
  t2i = owner.astype(np.int32)[:, None]
  return (
    PositiveSets(i2t, counts.astype(np.int32), n_cap),
    PositiveSets(t2i, np.ones(n_cap, np.int32), n_img),
  )


def positives_from_id_dicts(
  gt: Mapping[int, Sequence[int]], *, query_ids: Sequence[int], gallery_ids: Sequence[int]
) -> PositiveSets:
  """Converts ``eccv_caption``-style ``{query_id: [gallery ids]}`` ground truth.

  Queries absent from ``gt`` get no positives (``R = 0``: excluded from means,
  as ``eccv_caption`` only iterates over the keys of its ground truth). Ids not
  in ``gallery_ids`` cannot be retrieved but still count in ``R``.
  """
  position = {int(g): j for j, g in enumerate(gallery_ids)}
  lists, npos = [], []
  for qid in query_ids:
    ids = list(dict.fromkeys(int(v) for v in gt.get(int(qid), ())))
    lists.append([position[v] for v in ids if v in position])
    npos.append(len(ids))
  return positives_from_lists(lists, num_gallery=len(position), num_positives=npos)
