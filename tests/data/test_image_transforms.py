"""The evaluation image of a tower on hand-checked cases (value-for-value equality with
open_clip's transform: tests/parity)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from jitr.data.image_transforms import centre_box, eval_image, resized_size
from jitr.models.clip.open_clip_configs import OPENAI, SIGLIP, Preprocessing


def test_sizes_and_crop_box():
  assert resized_size(300, 200, 224, "shortest") == (336, 224)
  assert resized_size(200, 300, 224, "shortest") == (224, 336)
  assert resized_size(1000, 333, 224, "shortest") == (672, 224)  # int(672.67)
  assert resized_size(1000, 333, 224, "squash") == (224, 224)
  assert centre_box(336, 224, 224) == (56, 0, 280, 224)
  assert centre_box(225, 224, 224) == (0, 0, 224, 224)  # round(0.5) = 0, half to even
  assert centre_box(227, 224, 224) == (2, 0, 226, 224)  # round(1.5) = 2
  with pytest.raises(ValueError, match=r"^resize_mode 'longest': expected 'shortest' or 'squash'$"):
    resized_size(10, 10, 8, "longest")


def test_a_flat_image_is_its_normalised_colour():
  image = Image.new("RGB", (40, 30), (255, 128, 0))
  got = eval_image(image, 16, SIGLIP)
  assert got.shape == (16, 16, 3) and got.dtype == np.float32
  expected = (np.array([255, 128, 0], np.float32) / np.float32(255) - 0.5) / 0.5
  np.testing.assert_array_equal(got, np.broadcast_to(expected, (16, 16, 3)))
  grey = eval_image(Image.new("L", (20, 20), 51), 20, OPENAI)
  expected = (np.float32(51) / np.float32(255) - np.asarray(OPENAI.mean, np.float32)) / np.asarray(
    OPENAI.std, np.float32
  )
  np.testing.assert_array_equal(grey[3, 4], expected)


def test_the_crop_keeps_the_centre():
  pixels = np.zeros((20, 60, 3), np.uint8)
  pixels[:, 20:40] = 255  # a white band in the middle third
  got = eval_image(
    Image.fromarray(pixels), 20, Preprocessing((0, 0, 0), (1, 1, 1), "bilinear", "shortest")
  )
  np.testing.assert_array_equal(got, 1.0)  # no resize (short side 20), the centre 20 columns


def test_unknown_interpolation_is_one_line():
  pre = Preprocessing(OPENAI.mean, OPENAI.std, "lanczos", "shortest")
  with pytest.raises(
    ValueError, match=r"^interpolation 'lanczos': expected one of \['bicubic', 'bilinear'\]$"
  ):
    eval_image(Image.new("RGB", (8, 8)), 8, pre)
