"""One ``jitr_shapes`` example from ``(seed, split, index)`` (numpy only).

This is everything the TFDS builder stores, computed without TensorFlow; the
builder only serialises it. Each example has its own RNG
(``default_rng([seed, split_id, index])``), so examples are independent of each
other and of generation order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitr.data.shapes import captions as shapes_captions
from jitr.data.shapes import regions as shapes_regions
from jitr.data.shapes import render as shapes_render
from jitr.data.shapes import scene as shapes_scene

SPLITS: tuple[str, ...] = ("train", "val", "test")


def split_id(split: str) -> int:
  """Index of ``split`` in ``SPLITS`` (part of every example's RNG seed)."""
  if split not in SPLITS:
    raise ValueError(f"jitr_shapes: unknown split {split!r}; expected one of {SPLITS}")
  return SPLITS.index(split)


def make_example(
  seed: int,
  split: str,
  index: int,
  *,
  region_dim: int = shapes_regions.DEFAULT_REGION_DIM,
  max_regions: int = shapes_scene.MAX_OBJECTS,
  png: bool = False,
) -> dict[str, Any]:
  """The example ``index`` of ``split``.

  Returns a dict with ``image`` uint8 ``[64, 64, 3]`` (or its PNG bytes if
  ``png``), ``regions`` float32
  ``[max_regions, region_dim]``, ``region_mask`` bool ``[max_regions]``,
  ``captions`` (5 str), ``caption_facts`` int32 ``[5, FACT_FIELDS]``,
  ``facts_json`` (5 str, human-readable facts), ``scene`` int32
  ``[MAX_OBJECTS, OBJECT_FIELDS]``, ``scene_seed`` and ``image_id`` (= index).
  """
  rng = shapes_scene.example_rng(seed, split_id(split), index)
  scene = shapes_scene.sample_scene(rng)
  captions = shapes_captions.generate_captions(scene, rng)
  regions, mask = shapes_regions.region_features(
    scene, max_regions=max_regions, region_dim=region_dim
  )
  image = shapes_render.render(scene)
  return {
    "image": shapes_render.encode_png(image) if png else image,
    "regions": regions,
    "region_mask": mask,
    "captions": [t for t, _ in captions],
    "caption_facts": shapes_captions.stack_facts([f for _, f in captions]),
    "facts_json": [f.to_json() for _, f in captions],
    "scene": scene.to_array(),
    "scene_seed": scene.seed,
    "image_id": index,
  }


def make_split(seed: int, split: str, num: int, **kwargs) -> dict[str, Any]:
  """``num`` examples of ``split`` stacked into arrays (lists for strings);
  ``captions`` is flattened image-major to ``5·num`` strings, like
  ``*_precomp`` caption files."""
  examples = [make_example(seed, split, i, **kwargs) for i in range(num)]
  out: dict[str, Any] = {}
  for key in examples[0]:
    values = [e[key] for e in examples]
    if key in ("captions", "facts_json"):
      out[key] = [c for v in values for c in v]
    else:
      out[key] = np.stack([np.asarray(v) for v in values])
  return out
