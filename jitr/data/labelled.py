"""A labelled vector dataset's folder: each split's image vectors, text vectors and labels.

The folder (``config.labelled.folder``, a path or a storage URL) holds, per split, three
files named by ``config.labelled.images`` / ``texts`` / ``labels`` with ``{split}``
replaced by the split's name (``train_name``, ``val_name``, ``test_name``)::

  train_images.npy  [n, D_img]  float image vectors (CMAL²R: 4096-d fc7 on Wikipedia)
  train_texts.npy   [n, D_txt]  float text vectors, row i the text of image i
  train_labels.npy  [n]         class ids (one class each), or [n, C] 0/1 memberships
  test_...

A ``.mat`` file is read through the variable its ``*_variable`` field names (``{split}``
replaced too), so one file may hold every split: ``images = "wiki.mat"``,
``image_variable = "I_{split}"`` with ``train_name = "tr"`` reads ``I_tr``. Class ids
start at ``first_class`` (1 for MATLAB's). :func:`read_labelled_folder` reads and checks
every split (:mod:`jitr.data.labelled_arrays`: one line naming a bad file): the three
files of a split hold the same number of rows, every split the same widths and classes,
and the classes match the dataset's (:class:`~jitr.data.datasets.LabelledLayout`:
Wikipedia 10 classes, one per pair; Pascal 20, any number per pair).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitr.data import labelled_arrays as arrays
from jitr.data.datasets import ANY_CLASSES, LabelledLayout
from jitr.data.labelled_arrays import LabelledDataError

POSITIVES = ("class", "pair")
"""``config.labelled.positives``: rows sharing a class are positives, or only a pair."""


@dataclasses.dataclass(frozen=True)
class LabelledSettings:
  """``config.labelled`` (configs/default.py documents each field)."""

  folder: str
  images: str
  texts: str
  labels: str
  image_variable: str
  text_variable: str
  label_variable: str
  train_name: str
  val_name: str
  test_name: str
  first_class: int
  val_pairs: int
  positives: str

  @classmethod
  def of(cls, group: Mapping[str, Any]) -> LabelledSettings:
    """The settings of the config group ``group`` (every field present)."""
    return cls(**{f.name: group[f.name] for f in dataclasses.fields(cls)})

  def split_names(self) -> dict[str, str]:
    """``{run split: its name in the files}``: train and test, and val unless it is held
    out of the training pairs (``val_pairs`` > 0)."""
    names = {"train": self.train_name, "test": self.test_name}
    if not self.val_pairs:
      names["val"] = self.val_name
    return names


@dataclasses.dataclass(frozen=True)
class LabelledSplit:
  """One split: ``images [n, D_img]`` and ``texts [n, D_txt]`` float32 (pair i = image i and
  text i) and ``labels [n, C]`` bool class memberships."""

  images: np.ndarray
  texts: np.ndarray
  labels: np.ndarray

  @property
  def num_pairs(self) -> int:
    return len(self.images)


def split_paths(settings: LabelledSettings, name: str) -> dict[str, tuple[str, str]]:
  """``{"images" | "texts" | "labels": (path, variable)}`` of the split called ``name``."""
  return {
    part: (
      os.path.join(settings.folder, getattr(settings, part).format(split=name)),
      getattr(settings, f"{part[:-1]}_variable").format(split=name),
    )
    for part in ("images", "texts", "labels")
  }


def _read(settings: LabelledSettings, name: str) -> tuple[dict, np.ndarray, np.ndarray, Any]:
  """``(paths, images, texts, raw labels)`` of the split ``name``, each checked alone."""
  where = split_paths(settings, name)

  def read(part: str, what: str) -> np.ndarray:
    path, variable = where[part]
    return arrays.read_array(path, variable, what, f"config.labelled.{part[:-1]}_variable")

  images = arrays.vectors(read("images", "image vectors"), where["images"][0], "image vectors")
  texts = arrays.vectors(read("texts", "text vectors"), where["texts"][0], "text vectors")
  labels = arrays.labels(read("labels", "class labels"), where["labels"][0], settings.first_class)
  rows = {part: len(a) for part, a in (("images", images), ("texts", texts), ("labels", labels))}
  if len(set(rows.values())) > 1:
    counts = ", ".join(f"{where[p][0]} {n}" for p, n in rows.items())
    raise LabelledDataError(
      f"split {name!r}: the files disagree on the number of pairs ({counts}); expected one "
      "row per pair in each"
    )
  return where, images, texts, labels


def _num_classes(raw: Mapping[str, np.ndarray], layout: LabelledLayout) -> int:
  """The classes of every split's labels: the dataset's, else memberships' columns, else
  the largest id + 1."""
  if layout.classes is not None:
    return layout.classes
  widths = {r.shape[1] for r in raw.values() if r.ndim == 2}
  if widths:
    return max(widths)
  return int(max(r.max() for r in raw.values())) + 1


def _memberships(raw: np.ndarray, classes: int, path: str, layout: LabelledLayout) -> np.ndarray:
  """``[n, classes]`` bool of ids or memberships, checked against the dataset's classes."""
  if raw.ndim == 1:
    if raw.max() >= classes:
      raise LabelledDataError(
        f"{path}: class id {int(raw.max())} (counted from 0) of {classes} classes; expected "
        f"ids below {classes} (MATLAB's 1-based ids: config.labelled.first_class = 1)"
      )
    out = np.zeros((len(raw), classes), bool)
    out[np.arange(len(raw)), raw] = True
    return out
  if raw.shape[1] != classes:
    raise LabelledDataError(f"{path}: {raw.shape[1]} label columns; expected {classes} classes")
  if layout.multi_label is False and not np.all(raw.sum(axis=1) == 1):
    row = int(np.flatnonzero(raw.sum(axis=1) != 1)[0])
    raise LabelledDataError(
      f"{path}: row {row} has {int(raw[row].sum())} classes; expected exactly one per pair"
    )
  return raw


def _same_widths(read: Mapping[str, tuple]) -> None:
  """Every split's image (text) vectors are as wide as the first split's."""
  (first, (first_paths, *first_vectors, _)), *others = read.items()
  for where, *vectors, _ in (r for _, r in others):
    for part, got, want in zip(("images", "texts"), vectors, first_vectors):
      if got.shape[1] != want.shape[1]:
        raise LabelledDataError(
          f"{where[part][0]}: {got.shape[1]}-d vectors; expected {want.shape[1]}-d, "
          f"as in {first_paths[part][0]} ({first})"
        )


def read_labelled_folder(
  settings: LabelledSettings, layout: LabelledLayout = ANY_CLASSES
) -> dict[str, LabelledSplit]:
  """``{"train" | "test" [| "val"]: LabelledSplit}`` of the folder (the module docstring);
  the ``val`` files only when the validation pairs are not held out of the training ones.

  Raises:
    LabelledDataError: one line naming the first bad file and what was expected.
  """
  read = {split: _read(settings, name) for split, name in settings.split_names().items()}
  if layout.multi_label is True:
    for where, _, _, labels in read.values():
      if labels.ndim == 1:
        raise LabelledDataError(
          f"{where['labels'][0]}: class ids [n]; expected memberships [n, {layout.classes}] "
          "of 0 and 1 (a pair may have several classes)"
        )
  classes = _num_classes({split: r[3] for split, r in read.items()}, layout)
  out = {}
  for split, (where, images, texts, labels) in read.items():
    memberships = _memberships(labels, classes, where["labels"][0], layout)
    out[split] = LabelledSplit(images, texts, memberships)
  _same_widths(read)
  return out
