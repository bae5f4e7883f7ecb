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
  if image.mode != "RGB":
    image = image.convert("RGB")
  x = np.asarray(image, np.uint8).astype(np.float32) / np.float32(255)
  mean = np.asarray(preprocessing.mean, np.float32)
  return (x - mean) / np.asarray(preprocessing.std, np.float32)
