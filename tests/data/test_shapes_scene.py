"""Scene sampling: determinism by seed, constraints, packing."""

import numpy as np
import pytest

from jitr.data.shapes import scene as shapes_scene


def test_same_seed_same_scene_and_independent_examples():
  a = shapes_scene.sample_scene(shapes_scene.example_rng(7, 0, 12))
  b = shapes_scene.sample_scene(shapes_scene.example_rng(7, 0, 12))
  assert a == b
  others = {shapes_scene.sample_scene(shapes_scene.example_rng(7, 0, i)) for i in range(20)}
  assert len(others) == 20
  assert shapes_scene.sample_scene(shapes_scene.example_rng(7, 1, 12)) != a  # other split
  assert shapes_scene.sample_scene(shapes_scene.example_rng(8, 0, 12)) != a  # other seed


def test_scene_constraints_hold_over_many_samples():
  counts = np.zeros(shapes_scene.MAX_OBJECTS + 1, int)
  seen_attr = [set() for _ in range(shapes_scene.NUM_ATTRIBUTES)]
  for i in range(300):
    scene = shapes_scene.sample_scene(shapes_scene.example_rng(0, 0, i))
    n = len(scene.objects)
    counts[n] += 1
    assert len({(o.row, o.col) for o in scene.objects}) == n
    for o in scene.objects:
      assert abs(o.dx) <= shapes_scene.MAX_JITTER and abs(o.dy) <= shapes_scene.MAX_JITTER
      for k, v in enumerate(o.attributes()):
        seen_attr[k].add(v)
  assert counts[0] == 0 and all(counts[1:] > 60)
  assert [len(s) for s in seen_attr] == list(shapes_scene.ATTRIBUTE_CARDINALITY)


def test_pack_unpack_round_trip():
  scene = shapes_scene.Scene(
    (shapes_scene.SceneObject(0, 1, 1, 0, 0, 2, -1), shapes_scene.SceneObject(4, 7, 0, 2, 1)),
    seed=5,
  )
  arr = scene.to_array()
  assert (
    arr.shape == (shapes_scene.MAX_OBJECTS, shapes_scene.OBJECT_FIELDS) and arr.dtype == np.int32
  )
  np.testing.assert_array_equal(arr[0], [0, 1, 1, 0, 0, 2, -1])
  np.testing.assert_array_equal(arr[2], [-1] * shapes_scene.OBJECT_FIELDS)
  assert shapes_scene.Scene.from_array(arr, seed=5) == scene


def test_invalid_scenes_are_rejected():
  with pytest.raises(ValueError, match="distinct cells"):
    shapes_scene.Scene(
      (shapes_scene.SceneObject(0, 0, 0, 1, 1), shapes_scene.SceneObject(1, 1, 1, 1, 1))
    )
  with pytest.raises(ValueError, match="colour=8"):
    shapes_scene.Scene((shapes_scene.SceneObject(0, 8, 0, 1, 1),))
  with pytest.raises(ValueError, match="1..3 objects"):
    shapes_scene.Scene(())
