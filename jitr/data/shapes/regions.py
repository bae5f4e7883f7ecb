"""BUTD-like region features for ``jitr_shapes`` scenes (numpy only).

Like the bottom-up-attention features of Flickr30K/COCO (a padded set of
per-region vectors), each object becomes one region vector::

    raw    = [onehot(shape) | onehot(colour) | onehot(size) | box/64 | area/64²]
    region = relu((raw + ε) @ W),   ε ~ N(0, noise²),   W ~ N(0, 1/RAW_DIM)

with ``W`` a fixed random projection (seeded, identical for every image) and
``ε`` drawn from the scene's own seed. Regions are padded with zeros to
``max_regions`` and come with a boolean mask, so the region encoders run on
them exactly as on ``*_precomp`` features.
"""

from __future__ import annotations

import functools

import numpy as np

from jitr.data.shapes import render as shapes_render
from jitr.data.shapes import scene as shapes_scene

RAW_DIM = len(shapes_scene.SHAPES) + len(shapes_scene.COLOURS) + len(shapes_scene.SIZES) + 4 + 1
DEFAULT_REGION_DIM = 128
DEFAULT_NOISE = 0.1
PROJECTION_SEED = 20240601


@functools.lru_cache(maxsize=8)
def projection(region_dim: int = DEFAULT_REGION_DIM, seed: int = PROJECTION_SEED) -> np.ndarray:
  """The fixed ``[RAW_DIM, region_dim]`` float32 projection, ``N(0, 1/RAW_DIM)``."""
  w = np.random.default_rng(seed).normal(0.0, 1.0 / np.sqrt(RAW_DIM), size=(RAW_DIM, region_dim))
  w = w.astype(np.float32)
  w.flags.writeable = False
  return w


def raw_object_vector(
  obj: shapes_scene.SceneObject, image_size: int = shapes_render.IMAGE_SIZE
) -> np.ndarray:
  """``[RAW_DIM]`` float32: attribute one-hots, normalised box, normalised area."""
  v = np.zeros((RAW_DIM,), np.float32)
  v[obj.shape] = 1.0
  v[len(shapes_scene.SHAPES) + obj.colour] = 1.0
  v[len(shapes_scene.SHAPES) + len(shapes_scene.COLOURS) + obj.size] = 1.0
  x0, y0, x1, y1 = shapes_render.object_box(obj, image_size)
  v[-5:-1] = np.array([x0, y0, x1, y1], np.float32) / image_size
  v[-1] = (x1 - x0) * (y1 - y0) / image_size**2
  return v


def region_features(
  scene: shapes_scene.Scene,
  *,
  max_regions: int = shapes_scene.MAX_OBJECTS,
  region_dim: int = DEFAULT_REGION_DIM,
  noise: float = DEFAULT_NOISE,
  projection_seed: int = PROJECTION_SEED,
) -> tuple[np.ndarray, np.ndarray]:
  """Region features of ``scene``: float32 ``[max_regions, region_dim]`` (zero
  padded) and bool mask ``[max_regions]`` (True for the scene's objects, in
  drawing order). Deterministic given the scene."""
  if max_regions < len(scene.objects):
    raise ValueError(f"region_features: max_regions={max_regions} < {len(scene.objects)} objects")
  raw = np.stack([raw_object_vector(o) for o in scene.objects])
  rng = np.random.default_rng([scene.seed, 1])
  raw = raw + rng.normal(0.0, noise, size=raw.shape).astype(np.float32)
  feats = np.maximum(raw @ projection(region_dim, projection_seed), 0.0)
  out = np.zeros((max_regions, region_dim), np.float32)
  out[: len(scene.objects)] = feats
  mask = np.zeros((max_regions,), bool)
  mask[: len(scene.objects)] = True
  return out, mask
