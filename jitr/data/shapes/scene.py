"""Scenes of the synthetic ``jitr_shapes`` dataset (numpy only, pure).

A scene is 1-3 objects on a 64x64 canvas. Each object has a shape, a colour, a
size and a cell of a 3x3 grid (row, col); objects occupy distinct cells. A small
pixel jitter moves each object inside its cell, and a per-scene ``seed`` drives
the renderer's colour shades and pixel noise, so a scene determines its image
exactly.

Scenes are packed into int32 arrays ``[MAX_OBJECTS, OBJECT_FIELDS]`` with rows
``(shape, colour, size, row, col, dx, dy)`` and ``-1`` rows for absent objects;
that array is what the TFDS builder stores and what relevance is computed from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "diamond", "cross")
COLOURS: tuple[str, ...] = ("red", "green", "blue", "yellow", "purple", "orange", "cyan", "white")
SIZES: tuple[str, ...] = ("small", "large")
ROWS: tuple[str, ...] = ("top", "middle", "bottom")
COLS: tuple[str, ...] = ("left", "center", "right")

# Index of each semantic attribute inside an object row / a mention row.
SHAPE, COLOUR, SIZE, ROW, COL = 0, 1, 2, 3, 4
NUM_ATTRIBUTES = 5
ATTRIBUTE_CARDINALITY: tuple[int, ...] = (
  len(SHAPES),
  len(COLOURS),
  len(SIZES),
  len(ROWS),
  len(COLS),
)
DX, DY = 5, 6
OBJECT_FIELDS = 7

MIN_OBJECTS = 1
MAX_OBJECTS = 3
GRID = 3
MAX_JITTER = 2  # pixels, in each direction


@dataclasses.dataclass(frozen=True)
class SceneObject:
  """One object: attribute indices into SHAPES, COLOURS, ... and pixel jitter."""

  shape: int
  colour: int
  size: int
  row: int
  col: int
  dx: int = 0
  dy: int = 0

  def attributes(self) -> tuple[int, int, int, int, int]:
    """``(shape, colour, size, row, col)``."""
    return (self.shape, self.colour, self.size, self.row, self.col)

  def describe(self) -> str:
    """Canonical English name, e.g. ``'large red circle (top, left)'``."""
    return (
      f"{SIZES[self.size]} {COLOURS[self.colour]} {SHAPES[self.shape]} "
      f"({ROWS[self.row]}, {COLS[self.col]})"
    )


@dataclasses.dataclass(frozen=True)
class Scene:
  """Objects in drawing order plus the seed of the renderer's noise."""

  objects: tuple[SceneObject, ...]
  seed: int = 0

  def __post_init__(self):
    n = len(self.objects)
    if not MIN_OBJECTS <= n <= MAX_OBJECTS:
      raise ValueError(f"Scene: expected {MIN_OBJECTS}..{MAX_OBJECTS} objects, got {n}")
    cells = [(o.row, o.col) for o in self.objects]
    if len(set(cells)) != n:
      raise ValueError(f"Scene: objects must occupy distinct cells, got {cells}")
    for o in self.objects:
      for value, card, name in zip(
        o.attributes(), ATTRIBUTE_CARDINALITY, ("shape", "colour", "size", "row", "col")
      ):
        if not 0 <= value < card:
          raise ValueError(f"Scene: {name}={value} outside [0, {card})")

  def to_array(self) -> np.ndarray:
    """Packs into int32 ``[MAX_OBJECTS, OBJECT_FIELDS]``, absent rows ``-1``."""
    out = np.full((MAX_OBJECTS, OBJECT_FIELDS), -1, dtype=np.int32)
    for i, o in enumerate(self.objects):
      out[i] = (o.shape, o.colour, o.size, o.row, o.col, o.dx, o.dy)
    return out

  @classmethod
  def from_array(cls, array: np.ndarray, seed: int = 0) -> Scene:
    """Inverse of :meth:`to_array`."""
    array = np.asarray(array)
    if array.shape != (MAX_OBJECTS, OBJECT_FIELDS):
      raise ValueError(
        f"Scene.from_array: expected shape {(MAX_OBJECTS, OBJECT_FIELDS)}, got {array.shape}"
      )
    objects = tuple(SceneObject(*(int(v) for v in row)) for row in array if row[SHAPE] >= 0)
    return cls(objects=objects, seed=seed)


def sample_scene(rng: np.random.Generator) -> Scene:
  """Samples a scene: uniform object count in [1, 3], distinct cells, uniform
  attributes, jitter uniform in [-MAX_JITTER, MAX_JITTER], a 31-bit noise seed."""
  n = int(rng.integers(MIN_OBJECTS, MAX_OBJECTS + 1))
  cells = rng.choice(GRID * GRID, size=n, replace=False)
  objects = []
  for cell in cells:
    objects.append(
      SceneObject(
        shape=int(rng.integers(len(SHAPES))),
        colour=int(rng.integers(len(COLOURS))),
        size=int(rng.integers(len(SIZES))),
        row=int(cell) // GRID,
        col=int(cell) % GRID,
        dx=int(rng.integers(-MAX_JITTER, MAX_JITTER + 1)),
        dy=int(rng.integers(-MAX_JITTER, MAX_JITTER + 1)),
      )
    )
  return Scene(objects=tuple(objects), seed=int(rng.integers(2**31 - 1)))


def example_rng(seed: int, split_id: int, index: int) -> np.random.Generator:
  """The RNG of one example: independent of every other, so examples can be
  generated in any order or in parallel and still be identical."""
  return np.random.default_rng([seed, split_id, index])


def stack_scenes(scenes: Sequence[Scene]) -> np.ndarray:
  """``[N, MAX_OBJECTS, OBJECT_FIELDS]`` int32 of packed scenes."""
  return np.stack([s.to_array() for s in scenes]).astype(np.int32)
