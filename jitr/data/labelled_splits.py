"""A labelled vector dataset as a run's train, val and test :class:`RetrievalSplit` s.

Each pair is one image and one text (``caption_image = arange(n)``): the splits hold the
image vectors as ``images``, the texts as ``text_vectors`` and the class memberships as
``class_labels``. With ``config.labelled.positives = "class"`` (CMAL²R's relevance) the
pairs of a training batch that share a class are each other's positives; with
``"pair"`` only each pair is, and the ``labels`` graded source grades the rest by label
overlap. The validation split is the folder's ``val`` files or, with ``val_pairs = N``
> 0, the training pairs ``⌊k·n/N⌋`` for ``k = 0 .. N−1`` (spread evenly over the file
whatever its order), the others training.
"""

from __future__ import annotations

import numpy as np

from jitr.data.datasets import ANY_CLASSES, LabelledLayout
from jitr.data.labelled import (
  LabelledDataError,
  LabelledSettings,
  LabelledSplit,
  read_labelled_folder,
)
from jitr.data.pairs import RetrievalSplit


def held_out(num_pairs: int, val_pairs: int) -> np.ndarray:
  """The indices ``⌊k·n/N⌋``, ``k = 0 .. N−1`` of the ``N = val_pairs`` validation pairs
  among ``n = num_pairs`` (distinct while ``N <= n``).

  >>> held_out(10, 4).tolist()
  [0, 2, 5, 7]
  """
  return np.arange(val_pairs, dtype=np.int64) * num_pairs // val_pairs


def split_off(train: LabelledSplit, val_pairs: int) -> tuple[LabelledSplit, LabelledSplit]:
  """``(train, val)``: the :func:`held_out` pairs of ``train`` as the validation split."""
  if val_pairs >= train.num_pairs:
    raise LabelledDataError(
      f"config.labelled.val_pairs: {val_pairs} validation pairs, but the training files "
      f"hold {train.num_pairs}; expected fewer"
    )
  val = np.zeros(train.num_pairs, bool)
  val[held_out(train.num_pairs, val_pairs)] = True

  def rows(mask):
    return LabelledSplit(train.images[mask], train.texts[mask], train.labels[mask])

  return rows(~val), rows(val)


def retrieval_split(split: LabelledSplit, *, class_positives: bool) -> RetrievalSplit:
  """One text per image: ``images``, ``text_vectors``, ``class_labels``, no tokens."""
  return RetrievalSplit(
    images=split.images,
    tokens=None,
    lengths=None,
    caption_image=np.arange(split.num_pairs),
    text_vectors=split.texts,
    class_labels=split.labels,
    class_positives=class_positives,
  )


def labelled_splits(
  settings: LabelledSettings, layout: LabelledLayout = ANY_CLASSES
) -> dict[str, RetrievalSplit]:
  """``{"train" | "val" | "test": RetrievalSplit}`` of the folder (the module docstring).

  Raises:
    LabelledDataError: one line naming the first bad file, or too many ``val_pairs``.
  """
  read = read_labelled_folder(settings, layout)
  if settings.val_pairs:
    read["train"], read["val"] = split_off(read["train"], settings.val_pairs)
  positives = settings.positives == "class"
  return {
    name: retrieval_split(read[name], class_positives=positives)
    for name in ("train", "val", "test")
  }
