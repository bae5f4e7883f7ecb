"""jitr's evaluation image equals open_clip's ``image_transform(..., is_train=False)`` value
for value, for every preprocessing kind of the pretrained tags, on generated images of
several sizes, aspect ratios and modes (up- and downscaling)."""

from __future__ import annotations

import numpy as np
import pytest
from open_clip.transform import image_transform
from PIL import Image

from jitr.data.image_transforms import eval_image
from jitr.models.clip.open_clip_configs import (
  INCEPTION_SHORTEST,
  OPENAI,
  OPENAI_SQUASH,
  SIGLIP,
  Preprocessing,
)

pytestmark = pytest.mark.open_clip

SIZES = [(300, 200), (200, 300), (224, 224), (225, 224), (50, 80), (640, 480), (1000, 333)]


def _image(width, height, mode, seed):
  rng = np.random.default_rng(seed)
  # smooth content plus noise, so that resampling filters matter
  y, x = np.mgrid[0:height, 0:width]
  base = np.stack([np.sin(x / 7.0 + c) * np.cos(y / 11.0 - c) for c in range(3)], axis=-1)
  pixels = np.clip(127.5 + 100 * base + rng.normal(0, 20, base.shape), 0, 255).astype(np.uint8)
  image = Image.fromarray(pixels, "RGB")
  return image.convert(mode) if mode != "RGB" else image


@pytest.mark.parametrize("pre", [OPENAI, OPENAI_SQUASH, INCEPTION_SHORTEST, SIGLIP])
@pytest.mark.parametrize("size", [224, 256])
def test_eval_image_equals_open_clip(pre: Preprocessing, size):
  theirs = image_transform(
    size,
    is_train=False,
    mean=pre.mean,
    std=pre.std,
    resize_mode=pre.resize_mode,
    interpolation=pre.interpolation,
  )
  for i, (w, h) in enumerate(SIZES):
    for mode in ("RGB", "L", "RGBA"):
      image = _image(w, h, mode, seed=i)
      expected = theirs(image).numpy().transpose(1, 2, 0)
      got = eval_image(image, size, pre)
      assert got.shape == (size, size, 3) and got.dtype == np.float32
      np.testing.assert_array_equal(got, expected, err_msg=f"{w}x{h} {mode}")


def test_bilinear_too():
  pre = Preprocessing(OPENAI.mean, OPENAI.std, "bilinear", "shortest")
  theirs = image_transform(
    224, is_train=False, mean=pre.mean, std=pre.std, interpolation="bilinear"
  )
  image = _image(500, 375, "RGB", 0)
  np.testing.assert_array_equal(
    eval_image(image, 224, pre), theirs(image).numpy().transpose(1, 2, 0)
  )


@pytest.mark.parametrize("pre", [OPENAI, SIGLIP])
def test_train_image_equals_open_clips_training_transform_for_the_same_box(pre, monkeypatch):
  import torchvision.transforms as T

  from jitr.data.image_transforms import random_crop_box, train_image

  theirs = image_transform(224, is_train=True, mean=pre.mean, std=pre.std)
  crop = theirs.transforms[0]
  assert isinstance(crop, T.RandomResizedCrop)
  assert crop.scale == (0.9, 1.0) and crop.interpolation == T.InterpolationMode.BICUBIC
  np.testing.assert_allclose(crop.ratio, (3 / 4, 4 / 3))
  for i, (w, h) in enumerate(SIZES):
    for mode in ("RGB", "L"):
      image = _image(w, h, mode, seed=i)
      left, top, right, bottom = random_crop_box(w, h, np.random.default_rng(i))
      box = (top, left, bottom - top, right - left)  # torchvision's (i, j, h, w)
      monkeypatch.setattr(T.RandomResizedCrop, "get_params", lambda *a, box=box: box)
      expected = theirs(image).numpy().transpose(1, 2, 0)
      got = train_image(image, 224, pre, np.random.default_rng(i))
      np.testing.assert_array_equal(got, expected, err_msg=f"{w}x{h} {mode}")
