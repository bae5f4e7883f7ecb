"""Positive sets and the mAP@R / R-Precision definitions on small cases."""

import numpy as np
import pytest

from jitr.evaluation import (
  PositiveSets,
  extended_metrics,
  positives_from_id_dicts,
  positives_from_lists,
  positives_from_owner,
)
from jitr.evaluation.eccv import map_at_r_from_hits


def test_map_at_r_hand_computed():
  # R = 3, hits at ranks 1 and 3 (rank 2 miss): mAP@R = (1/1 + 2/3) / 3,
  # R-P = 2/3. R = 2 with hits at ranks 2, 3: only rank 2 is within R.
  hits = np.array([[1, 0, 1, 0], [0, 1, 1, 0], [0, 0, 0, 0]], bool)
  ap, rp = map_at_r_from_hits(hits, np.array([3, 2, 0]))
  np.testing.assert_allclose(ap, [(1 + 2 / 3) / 3, (1 / 2) / 2, 0.0])
  np.testing.assert_allclose(rp, [2 / 3, 1 / 2, 0.0])


def test_extended_metrics_small():
  scores = np.array([[0.9, 0.8, 0.7, 0.6, 0.5], [0.1, 0.2, 0.3, 0.4, 0.5]], np.float32)
  # Query 0: positives {0, 2} plus one outside the gallery (R = 3).
  # Query 1: positives {0}: ranked last.
  pos = positives_from_lists([[0, 2], [0]], num_gallery=5, num_positives=[3, 1])
  m = extended_metrics(scores, pos, ks=(1, 5))
  assert m["mAP@R"] == pytest.approx(((1 + 2 / 3) / 3 + 0.0) / 2)
  assert m["R-P"] == pytest.approx((2 / 3 + 0.0) / 2)
  assert m["R@1"] == 0.5 and m["R@5"] == 1.0


def test_positive_set_builders():
  i2t, t2i = positives_from_owner(np.array([1, 0, 1, 1]))
  np.testing.assert_array_equal(i2t.indices, [[1, -1, -1], [0, 2, 3]])
  np.testing.assert_array_equal(i2t.num_positives, [1, 3])
  np.testing.assert_array_equal(t2i.indices[:, 0], [1, 0, 1, 1])
  gt = {10: [100, 102, 999, 100], 11: [101]}
  ps = positives_from_id_dicts(gt, query_ids=[10, 11, 12], gallery_ids=[100, 101, 102])
  np.testing.assert_array_equal(ps.indices, [[0, 2], [1, -1], [-1, -1]])
  np.testing.assert_array_equal(ps.num_positives, [3, 1, 0])  # 999 is outside
  np.testing.assert_array_equal(ps.dense(), [[1, 0, 1], [0, 1, 0], [0, 0, 0]])


def test_positive_set_validation():
  with pytest.raises(ValueError, match="indices"):
    PositiveSets(np.array([[5]]), np.array([1]), num_gallery=3)
  with pytest.raises(ValueError, match="num_positives"):
    PositiveSets(np.array([[0, 1]]), np.array([1]), num_gallery=3)
  with pytest.raises(ValueError, match="caption_to_image"):
    positives_from_owner(np.array([0.0, 1.0]))
