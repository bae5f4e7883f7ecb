"""Rendering: determinism, colours where objects are, exact shape areas."""

import numpy as np

from jitr.data.shapes import render as shapes_render
from jitr.data.shapes import scene as shapes_scene

RED, BLUE, CIRCLE, SQUARE = 0, 2, 0, 1


def test_render_is_deterministic_and_uint8():
  scene = shapes_scene.sample_scene(shapes_scene.example_rng(0, 0, 3))
  a, b = shapes_render.render(scene), shapes_render.render(scene)
  assert a.shape == (64, 64, 3) and a.dtype == np.uint8
  np.testing.assert_array_equal(a, b)
  other = shapes_scene.Scene(scene.objects, seed=scene.seed + 1)  # same objects, other noise
  assert not np.array_equal(a, shapes_render.render(other))


def test_objects_have_their_colour_and_background_is_dark():
  scene = shapes_scene.Scene(
    (
      shapes_scene.SceneObject(SQUARE, RED, 1, 1, 1),  # large, centre
      shapes_scene.SceneObject(CIRCLE, BLUE, 0, 0, 0),
    ),
    seed=1,
  )  # small, top-left
  img = shapes_render.render(scene).astype(int)
  cell = 64 / 3
  r, g, b = img[32, 32]  # centre of the square
  assert r > 160 and g < 80 and b < 80
  cx = cy = int(0.5 * cell)  # centre of the circle (pixel 10)
  r, g, b = img[cy, cx]
  assert b > 170 and r < 90 and g < 120
  assert img[60, 60].max() < 70  # empty bottom-right cell: background
  assert img[cy - 5, cx - 5].max() < 70  # corner of the circle's box: outside


def test_shape_areas_match_their_formulas():
  r = shapes_render.HALF_EXTENT[1]
  expected = {
    "circle": np.pi * r * r,
    "square": (1.7 * r) ** 2,
    "triangle": r * 2 * r,  # base 2r, height 2r
    "diamond": 2 * r * r,
    "cross": 2 * (2 * r) * (2 * r / 3) - (2 * r / 3) ** 2,
  }
  for shape, name in enumerate(shapes_scene.SHAPES):
    cov = shapes_render.object_coverage(shapes_scene.SceneObject(shape, 0, 1, 1, 1))
    # 2x2 supersampling: edges are quantised to half pixels (a few % of area)
    assert abs(cov.sum() - expected[name]) / expected[name] < 0.08, name


def test_object_box_from_cell_and_jitter():
  x0, y0, x1, y1 = shapes_render.object_box(shapes_scene.SceneObject(0, 0, 1, 2, 0, dx=2, dy=-1))
  cell = 64 / 3
  assert np.allclose(
    [x0, y0, x1, y1],
    [0.5 * cell + 2 - 8.5, 2.5 * cell - 1 - 8.5, 0.5 * cell + 2 + 8.5, 2.5 * cell - 1 + 8.5],
  )


def test_encode_png_decodes_back_exactly():
  import struct
  import zlib

  img = shapes_render.render(shapes_scene.sample_scene(shapes_scene.example_rng(0, 0, 5)))
  png = shapes_render.encode_png(img)
  assert png[:8] == b"\x89PNG\r\n\x1a\n"
  pos, chunks = 8, {}
  while pos < len(png):
    (n,) = struct.unpack(">I", png[pos : pos + 4])
    tag, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + n]
    (crc,) = struct.unpack(">I", png[pos + 8 + n : pos + 12 + n])
    assert crc == zlib.crc32(tag + data) & 0xFFFFFFFF
    chunks[tag] = data
    pos += 12 + n
  assert struct.unpack(">IIBBBBB", chunks[b"IHDR"]) == (64, 64, 8, 2, 0, 0, 0)
  raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(64, 1 + 64 * 3)
  assert np.all(raw[:, 0] == 2)  # "Up" filter on every row
  rows = np.cumsum(raw[:, 1:].astype(np.int64), axis=0) % 256
  np.testing.assert_array_equal(rows.reshape(64, 64, 3), img)
