"""An image as a CLIP / SigLIP tower's evaluation input, as open_clip's ``image_transform(...,
is_train=False)`` makes it from a PIL image (torchvision on PIL, then ``ToTensor`` and
``Normalize``), value for value.

For a tower of size ``S`` and a pretrained tag's
:class:`~jitr.models.Preprocessing`:

1. Resize with PIL's ``interpolation`` (bicubic or bilinear; PIL's antialiased filters):
   ``"shortest"`` scales the shorter side to ``S``, the longer to ``int(S · long / short)``
   (torchvision's rounding down); ``"squash"`` scales both sides to ``S``.
2. ``"shortest"`` then crops the centre ``S × S`` (top ``round((h − S) / 2)``, left
   ``round((w − S) / 2)``, Python's half-to-even ``round``).
3. RGB (a grey or RGBA image converted after the resize, as open_clip's
   ``MaybeConvertMode``), ``x = uint8 / 255`` and ``(x − mean) / std`` per channel, in
   float32: ``[S, S, 3]``, channels last.

For training, :func:`train_image` is open_clip's ``image_transform(..., is_train=True)``
without colour jitter or grey-scale (its defaults): torchvision's ``RandomResizedCrop(S,
scale=(0.9, 1.0), ratio=(3/4, 4/3), interpolation=BICUBIC)`` (:func:`random_crop_box`
draws the box as ``RandomResizedCrop.get_params`` does, from a numpy ``Generator``), RGB,
then step 3.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

_FILTERS = {"bicubic": Image.Resampling.BICUBIC, "bilinear": Image.Resampling.BILINEAR}


def resized_size(width: int, height: int, size: int, resize_mode: str) -> tuple[int, int]:
  """``(width, height)`` after step 1."""
  if resize_mode == "squash":
    return size, size
  if resize_mode != "shortest":
    raise ValueError(f"resize_mode {resize_mode!r}: expected 'shortest' or 'squash'")
  if width <= height:
    return size, int(size * height / width)
  return int(size * width / height), size


def centre_box(width: int, height: int, size: int) -> tuple[int, int, int, int]:
  """PIL's crop box ``(left, top, right, bottom)`` of the centre ``size × size``."""
  top, left = int(round((height - size) / 2.0)), int(round((width - size) / 2.0))
  return left, top, left + size, top + size


def normalized(image: Image.Image, preprocessing) -> np.ndarray:
  """Step 3: ``(uint8 / 255 − mean) / std`` of the RGB image, float32 ``[H, W, 3]``."""
  if image.mode != "RGB":
    image = image.convert("RGB")
  x = np.asarray(image, np.uint8).astype(np.float32) / np.float32(255)
  mean = np.asarray(preprocessing.mean, np.float32)
  return (x - mean) / np.asarray(preprocessing.std, np.float32)


def random_crop_box(
  width: int,
  height: int,
  rng: np.random.Generator,
  scale: tuple[float, float] = (0.9, 1.0),
  ratio: tuple[float, float] = (3 / 4, 4 / 3),
) -> tuple[int, int, int, int]:
  """PIL's crop box ``(left, top, right, bottom)`` of torchvision's
  ``RandomResizedCrop.get_params``: up to 10 draws of an area ``A · U(scale)`` and an aspect
  ratio ``exp(U(log ratio))`` (``w = round(√(area · r))``, ``h = round(√(area / r))``) until
  the box fits, placed uniformly; else the centre crop of the image clamped to ``ratio``."""
  area = width * height
  lo, hi = np.log(ratio[0]), np.log(ratio[1])
  for _ in range(10):
    target = area * rng.uniform(scale[0], scale[1])
    aspect = float(np.exp(rng.uniform(lo, hi)))
    w = int(round(np.sqrt(target * aspect)))
    h = int(round(np.sqrt(target / aspect)))
    if 0 < w <= width and 0 < h <= height:
      top = int(rng.integers(0, height - h + 1))
      left = int(rng.integers(0, width - w + 1))
      return left, top, left + w, top + h
  in_ratio = width / height
  if in_ratio < min(ratio):
    w, h = width, int(round(width / min(ratio)))
  elif in_ratio > max(ratio):
    w, h = int(round(height * max(ratio))), height
  else:
    w, h = width, height
  top, left = (height - h) // 2, (width - w) // 2
  return left, top, left + w, top + h


def train_image(
  image: Image.Image, size: int, preprocessing, rng: np.random.Generator
) -> np.ndarray:
  """open_clip's training transform of one PIL image (module docstring): float32
  ``[size, size, 3]``; the crop drawn from ``rng``."""
  box = random_crop_box(*image.size, rng)
  image = image.crop(box).resize((size, size), Image.Resampling.BICUBIC)
  return normalized(image, preprocessing)


def eval_image(image: Image.Image, size: int, preprocessing) -> np.ndarray:
  """Steps 1-3 for one PIL image: float32 ``[size, size, 3]``. ``preprocessing``: a
  :class:`~jitr.models.Preprocessing` (``mean``, ``std``,
  ``interpolation``, ``resize_mode``)."""
  if preprocessing.interpolation not in _FILTERS:
    raise ValueError(
      f"interpolation {preprocessing.interpolation!r}: expected one of {sorted(_FILTERS)}"
    )
  target = resized_size(*image.size, size, preprocessing.resize_mode)
  if target != image.size:
    image = image.resize(target, _FILTERS[preprocessing.interpolation])
  if preprocessing.resize_mode == "shortest":
    image = image.crop(centre_box(*image.size, size))
  return normalized(image, preprocessing)
