"""Rasterises a :class:`~jitr.data.shapes.scene.Scene` to uint8 RGB (numpy only).

Each object is drawn as an anti-aliased mask (2x2 supersampling) centred in its
grid cell plus its jitter; its colour is the palette colour times a per-object
shade in [0.85, 1.1]; the background is a dark, slightly tinted grey; Gaussian
pixel noise (sigma 3) is added last. All randomness comes from ``scene.seed``.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from jitr.data.shapes import scene as shapes_scene

IMAGE_SIZE = 64
SUPERSAMPLE = 2
# Half-extent of an object in pixels, per size index (small, large).
HALF_EXTENT: tuple[float, ...] = (5.0, 8.5)
PALETTE = np.array(
  [
    (220, 40, 40),  # red
    (40, 180, 60),  # green
    (50, 90, 230),  # blue
    (235, 220, 50),  # yellow
    (150, 60, 190),  # purple
    (245, 140, 30),  # orange
    (40, 205, 215),  # cyan
    (240, 240, 240),  # white
  ],
  dtype=np.float32,
)
assert len(PALETTE) == len(shapes_scene.COLOURS)


def object_center(
  obj: shapes_scene.SceneObject, image_size: int = IMAGE_SIZE
) -> tuple[float, float]:
  """``(cx, cy)`` in pixels:
  ``((col + 0.5) * image_size / 3 + dx, (row + 0.5) * image_size / 3 + dy)``."""
  cell = image_size / shapes_scene.GRID
  return ((obj.col + 0.5) * cell + obj.dx, (obj.row + 0.5) * cell + obj.dy)


def object_box(
  obj: shapes_scene.SceneObject, image_size: int = IMAGE_SIZE
) -> tuple[float, float, float, float]:
  """``(x0, y0, x1, y1)`` in pixels: centre -/+ the half-extent of its size."""
  cx, cy = object_center(obj, image_size)
  r = HALF_EXTENT[obj.size] * image_size / IMAGE_SIZE
  return (cx - r, cy - r, cx + r, cy + r)


def shape_mask(shape: int, dx: np.ndarray, dy: np.ndarray, r: float) -> np.ndarray:
  """Boolean mask of ``shape`` at offsets ``(dx, dy)`` from its centre, half-extent ``r``.

  circle ``dx²+dy² <= r²``; square ``max(|dx|,|dy|) <= 0.85 r``; triangle
  (pointing up) ``-r <= dy <= r`` and ``|dx| <= (dy + r) / 2``; diamond
  ``|dx|+|dy| <= r``; cross: union of two bars of half-width ``r/3``.
  """
  name = shapes_scene.SHAPES[shape]
  if name == "circle":
    return dx * dx + dy * dy <= r * r
  if name == "square":
    return np.maximum(np.abs(dx), np.abs(dy)) <= 0.85 * r
  if name == "triangle":
    return (dy >= -r) & (dy <= r) & (np.abs(dx) <= (dy + r) / 2)
  if name == "diamond":
    return np.abs(dx) + np.abs(dy) <= r
  if name == "cross":
    w = r / 3
    return ((np.abs(dx) <= w) & (np.abs(dy) <= r)) | ((np.abs(dy) <= w) & (np.abs(dx) <= r))
  raise ValueError(f"shape_mask: unknown shape index {shape}")


def _window(obj: shapes_scene.SceneObject, image_size: int) -> tuple[int, int, int, int]:
  """Pixel window ``(x0, y0, x1, y1)`` (exclusive end) containing ``obj``."""
  x0, y0, x1, y1 = object_box(obj, image_size)
  clamp = lambda v: int(min(max(v, 0), image_size))  # noqa: E731
  return (
    clamp(np.floor(x0) - 1),
    clamp(np.floor(y0) - 1),
    clamp(np.ceil(x1) + 1),
    clamp(np.ceil(y1) + 1),
  )


def _coverage_window(
  obj: shapes_scene.SceneObject, image_size: int, window: tuple[int, int, int, int]
) -> np.ndarray:
  x0, y0, x1, y1 = window
  xs = (np.arange(x0 * SUPERSAMPLE, x1 * SUPERSAMPLE, dtype=np.float32) + 0.5) / SUPERSAMPLE
  ys = (np.arange(y0 * SUPERSAMPLE, y1 * SUPERSAMPLE, dtype=np.float32) + 0.5) / SUPERSAMPLE
  cx, cy = object_center(obj, image_size)
  r = HALF_EXTENT[obj.size] * image_size / IMAGE_SIZE
  mask = shape_mask(obj.shape, xs[None, :] - cx, ys[:, None] - cy, r).astype(np.float32)
  return mask.reshape(y1 - y0, SUPERSAMPLE, x1 - x0, SUPERSAMPLE).mean(axis=(1, 3))


def object_coverage(obj: shapes_scene.SceneObject, image_size: int = IMAGE_SIZE) -> np.ndarray:
  """Fraction of each pixel covered by ``obj``: float32 ``[H, W]`` in [0, 1]
  (``SUPERSAMPLE²`` samples per pixel)."""
  out = np.zeros((image_size, image_size), np.float32)
  x0, y0, x1, y1 = window = _window(obj, image_size)
  out[y0:y1, x0:x1] = _coverage_window(obj, image_size, window)
  return out


def render(scene: shapes_scene.Scene, image_size: int = IMAGE_SIZE) -> np.ndarray:
  """Renders ``scene`` to uint8 ``[image_size, image_size, 3]``; deterministic."""
  rng = np.random.default_rng(scene.seed)
  grey = rng.uniform(18.0, 45.0)
  tint = rng.uniform(-6.0, 6.0, size=3)
  image = np.empty((image_size, image_size, 3), dtype=np.float32)
  image[...] = grey + tint
  for obj in scene.objects:
    colour = np.clip(PALETTE[obj.colour] * rng.uniform(0.85, 1.1), 0, 255)
    x0, y0, x1, y1 = window = _window(obj, image_size)
    alpha = _coverage_window(obj, image_size, window)[..., None]
    patch = image[y0:y1, x0:x1]
    image[y0:y1, x0:x1] = patch * (1.0 - alpha) + colour * alpha
  image += rng.normal(0.0, 3.0, size=image.shape).astype(np.float32)
  return np.clip(np.rint(image), 0, 255).astype(np.uint8)


def encode_png(image: np.ndarray, level: int = 6) -> bytes:
  """PNG bytes of a uint8 ``[H, W, 3]`` image (numpy + zlib, no PIL or TF):
  8-bit RGB, every row with the "Up" filter (byte-wise difference to the row
  above, mod 256)."""
  if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
    raise ValueError(f"encode_png: expected uint8 [H, W, 3], got {image.dtype} {image.shape}")
  h, w, _ = image.shape
  rows = image.reshape(h, w * 3)
  up = np.empty_like(rows)
  up[0] = rows[0]
  up[1:] = rows[1:] - rows[:-1]  # uint8 arithmetic wraps mod 256
  raw = np.concatenate([np.full((h, 1), 2, np.uint8), up], axis=1).tobytes()

  def chunk(tag: bytes, data: bytes) -> bytes:
    return (
      struct.pack(">I", len(data))
      + tag
      + data
      + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    )

  return (
    b"\x89PNG\r\n\x1a\n"
    + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    + chunk(b"IDAT", zlib.compress(raw, level))
    + chunk(b"IEND", b"")
  )
