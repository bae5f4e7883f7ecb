"""NCS@K and Semantic Recall@K on hand-computed cases."""

import numpy as np
import pytest

from jitr.evaluation import positives_from_lists, semantic_metrics


def test_ncs_and_semantic_recall_hand_computed():
  # One query, 6 gallery items; item 0 is the annotated positive (removed).
  scores = np.array([[0.9, 0.1, 0.8, 0.5, 0.7, 0.2]], np.float32)
  phi = np.array([[5.0, 0.0, 1.0, 3.0, 2.0, 4.0]], np.float32)
  pos = positives_from_lists([[0]], num_gallery=6)
  m = semantic_metrics(scores, phi, pos, ks=(1, 2, 3), num_relevant=1)
  # Ranking without the positive: 2 (phi 1), 4 (2), 3 (3), 5 (4), 1 (0).
  # Ideal without the positive: 5 (4), 3 (3), 4 (2), ...
  assert m["NCS@1"] == pytest.approx(1 / 4)
  assert m["NCS@2"] == pytest.approx((1 + 2) / (4 + 3))
  assert m["NCS@3"] == pytest.approx((1 + 2 + 3) / (4 + 3 + 2))
  # The single most relevant item (5) is retrieved at position 4.
  assert m["SR@1"] == 0.0 and m["SR@3"] == 0.0
  m = semantic_metrics(scores, phi, pos, ks=(3, 4), num_relevant=2)
  # With N = 2, item 3 (position 3) is relevant.
  assert m["SR@3"] == 1.0 and m["SR@4"] == 1.0


def test_ncs_is_a_ratio_of_sums_over_queries():
  scores = np.array([[0.3, 0.2, 0.1], [0.1, 0.2, 0.3]], np.float32)
  phi = np.array([[1.0, 2.0, 6.0], [1.0, 2.0, 6.0]], np.float32)
  none = positives_from_lists([[], []], num_gallery=3)
  m = semantic_metrics(scores, phi, none, ks=(1, 2), num_relevant=1)
  assert m["NCS@1"] == pytest.approx((1 + 6) / (6 + 6))
  assert m["NCS@2"] == pytest.approx((3 + 8) / (8 + 8))
  assert m["SR@1"] == 0.5 and m["SR@2"] == 0.5


def test_positives_need_room():
  pos = positives_from_lists([[0, 1]], num_gallery=3)
  with pytest.raises(ValueError, match="num_relevant"):
    semantic_metrics(np.zeros((1, 3)), np.zeros((1, 3)), pos, ks=(2,))
