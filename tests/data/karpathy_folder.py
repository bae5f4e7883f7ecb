"""A generated image folder with Karpathy's split file, for the image-folder tests."""

from __future__ import annotations

import json
import os

import numpy as np
from PIL import Image

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (30, 40, 220), "grey": (128,) * 3}
SHAPES = ("square", "disc")

#: An open_clip model config of a tiny CLIP (2 blocks of width 32 per tower, 32-pixel
#: images of 8-pixel patches, CLIP's 49,408 BPE ids).
TINY_TOWER = {
  "embed_dim": 16,
  "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "patch_size": 8, "head_width": 16},
  "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2},
}


def draw(colour: str, shape: str, size: tuple[int, int], seed: int) -> Image.Image:
  """A ``colour`` ``shape`` on a noisy background, ``size`` (width, height)."""
  rng = np.random.default_rng(seed)
  w, h = size
  pixels = rng.integers(0, 60, (h, w, 3)).astype(np.uint8)
  yy, xx = np.mgrid[:h, :w]
  r = min(w, h) // 3
  cy, cx = h // 2 + int(rng.integers(-3, 4)), w // 2 + int(rng.integers(-3, 4))
  if shape == "square":
    inside = (abs(yy - cy) < r) & (abs(xx - cx) < r)
  else:
    inside = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
  pixels[inside] = COLOURS[colour]
  return Image.fromarray(pixels)


def write_karpathy_folder(root: str, counts=(("train", 24), ("val", 8), ("test", 8))) -> tuple:
  """Writes ``root/images/*.jpg`` (sizes and aspect ratios vary) and
  ``root/dataset_mini.json``; returns ``(json path, image folder)``. Image ``k`` shows
  ``COLOURS[k % 4]`` ``SHAPES[k // 4 % 2]``, with 5 captions (the sixth image has 6)."""
  folder = os.path.join(root, "images")
  os.makedirs(folder, exist_ok=True)
  images, k = [], 0
  names = list(COLOURS)
  for split, count in counts:
    for _ in range(count):
      colour, shape = names[k % 4], SHAPES[k // 4 % 2]
      size = (40 + 8 * (k % 5), 36 + 12 * (k % 3))
      filename = f"{k:04d}.jpg"
      draw(colour, shape, size, k).save(os.path.join(folder, filename), quality=90)
      sentences = [
        f"a {colour} {shape}",
        f"a {shape} that is {colour}",
        f"one {colour} {shape} on a dark background",
        f"the {shape} is {colour}",
        f"{colour} {shape}",
      ]
      if k == 5:
        sentences.append(f"an extra caption of a {colour} {shape}")
      images.append(
        {
          "filename": filename,
          "imgid": k,
          "split": split,
          "sentences": [{"raw": s, "tokens": s.split(), "imgid": k} for s in sentences],
        }
      )
      k += 1
  path = os.path.join(root, "dataset_mini.json")
  with open(path, "w") as f:
    json.dump({"images": images, "dataset": "mini"}, f)
  return path, folder


def write_tiny_tower(root: str) -> str:
  """Writes :data:`TINY_TOWER` as ``root/tiny-clip.json``; returns its path."""
  path = os.path.join(root, "tiny-clip.json")
  with open(path, "w") as f:
    json.dump(TINY_TOWER, f)
  return path
