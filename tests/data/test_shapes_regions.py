"""Region features: shapes, mask, padding, fixed projection, determinism."""

import numpy as np
import pytest

from jitr.data.shapes import regions as shapes_regions
from jitr.data.shapes import scene as shapes_scene


def test_raw_vector_is_one_hots_box_and_area():
  obj = shapes_scene.SceneObject(shape=3, colour=5, size=1, row=1, col=1)
  v = shapes_regions.raw_object_vector(obj)
  assert v.shape == (shapes_regions.RAW_DIM,)
  assert v[3] == 1 and v[:5].sum() == 1
  assert v[5 + 5] == 1 and v[5:13].sum() == 1
  assert v[13 + 1] == 1 and v[13:15].sum() == 1
  c, r = 32.0, 8.5
  np.testing.assert_allclose(v[15:19], np.array([c - r, c - r, c + r, c + r]) / 64, rtol=1e-6)
  np.testing.assert_allclose(v[19], (2 * r) ** 2 / 64**2, rtol=1e-6)


def test_region_features_padded_masked_deterministic():
  scene = shapes_scene.Scene(
    (shapes_scene.SceneObject(0, 0, 0, 0, 0), shapes_scene.SceneObject(1, 1, 1, 2, 2)), seed=3
  )
  feats, mask = shapes_regions.region_features(scene, max_regions=4, region_dim=16)
  assert feats.shape == (4, 16) and feats.dtype == np.float32
  np.testing.assert_array_equal(mask, [True, True, False, False])
  assert np.all(feats[2:] == 0) and np.all(feats >= 0) and np.all(feats[:2].sum(-1) > 0)
  f2, m2 = shapes_regions.region_features(scene, max_regions=4, region_dim=16)
  np.testing.assert_array_equal(feats, f2)
  np.testing.assert_array_equal(mask, m2)
  with pytest.raises(ValueError, match="max_regions=1"):
    shapes_regions.region_features(scene, max_regions=1)


def test_projection_is_fixed_and_noise_is_small():
  np.testing.assert_array_equal(shapes_regions.projection(32), shapes_regions.projection(32))
  obj = shapes_scene.SceneObject(2, 3, 1, 1, 1)
  a, _ = shapes_regions.region_features(
    shapes_scene.Scene((obj,), seed=1), region_dim=64, noise=0.0
  )
  want = np.maximum(shapes_regions.raw_object_vector(obj) @ shapes_regions.projection(64), 0)
  np.testing.assert_allclose(a[0], want, rtol=1e-6, atol=1e-7)
  b, _ = shapes_regions.region_features(shapes_scene.Scene((obj,), seed=2), region_dim=64)
  other, _ = shapes_regions.region_features(
    shapes_scene.Scene((shapes_scene.SceneObject(0, 7, 0, 1, 1),), seed=1), region_dim=64, noise=0.0
  )
  # same object under noise stays closer than a different object
  assert np.linalg.norm(b[0] - a[0]) < 0.5 * np.linalg.norm(other[0] - a[0])
