"""Generated labelled vector folders with the shapes of CMAL²R's datasets and class structure
in the vectors: each class has a random image prototype and a random text prototype, and a
pair's image (text) vector is the mean of its classes' image (text) prototypes plus
Gaussian noise, so a network can learn to match images and texts of a class."""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np


@dataclasses.dataclass(frozen=True)
class Shape:
  """A dataset's widths and classes: CMAL²R's setup."""

  image_dim: int
  text_dim: int
  classes: int
  multi_label: bool


WIKI = Shape(image_dim=4096, text_dim=100, classes=10, multi_label=False)
PASCAL = Shape(image_dim=512, text_dim=399, classes=20, multi_label=True)


def memberships(rng: np.random.Generator, n: int, shape: Shape) -> np.ndarray:
  """bool ``[n, C]``: one class each, or (multi-label) one to three distinct classes."""
  out = np.zeros((n, shape.classes), bool)
  counts = rng.integers(1, 4, n) if shape.multi_label else np.ones(n, int)
  for i, k in enumerate(counts):
    out[i, rng.choice(shape.classes, size=k, replace=False)] = True
  return out


def pairs(
  rng: np.random.Generator, prototypes, n: int, shape: Shape, noise: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """``(images [n, D_img], texts [n, D_txt], labels [n, C])`` float32, float32, bool."""
  labels = memberships(rng, n, shape)
  weights = labels / labels.sum(axis=1, keepdims=True)
  image_protos, text_protos = prototypes
  images = weights @ image_protos + noise * rng.normal(size=(n, shape.image_dim))
  texts = weights @ text_protos + noise * rng.normal(size=(n, shape.text_dim))
  return images.astype(np.float32), texts.astype(np.float32), labels


def labelled_data(
  shape: Shape, counts: dict[str, int], *, seed: int = 0, noise: float = 1.5
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
  """``{split: (images, texts, labels)}`` with ``counts[split]`` pairs each."""
  rng = np.random.default_rng(seed)
  prototypes = (
    rng.normal(size=(shape.classes, shape.image_dim)),
    rng.normal(size=(shape.classes, shape.text_dim)),
  )
  return {split: pairs(rng, prototypes, n, shape, noise) for split, n in counts.items()}


def write_labelled(
  folder, shape: Shape, counts: dict[str, int], *, seed: int = 0, noise: float = 1.5
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
  """The folder of :func:`labelled_data` in jitr's default layout (``{split}_images.npy``,
  ``{split}_texts.npy``, ``{split}_labels.npy``: class ids for single-label data, 0/1
  memberships otherwise); returns the arrays."""
  folder = pathlib.Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  data = labelled_data(shape, counts, seed=seed, noise=noise)
  for split, (images, texts, labels) in data.items():
    np.save(folder / f"{split}_images.npy", images)
    np.save(folder / f"{split}_texts.npy", texts)
    stored = labels.astype(np.uint8) if shape.multi_label else np.argmax(labels, axis=1)
    np.save(folder / f"{split}_labels.npy", stored)
  return data


def chance_class_map(labels: np.ndarray) -> float:
  """The class MAP of a random ranking, about: the mean over the pairs of the fraction of
  the split that shares a class with the pair (for balanced single-label data, the mean
  class frequency 1/C)."""
  m = labels.astype(np.float32)
  return float(((m @ m.T) > 0).mean())
