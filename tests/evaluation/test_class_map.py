"""MAP over class labels."""

import numpy as np
import pytest

from jitr.evaluation import ClassLabels, EvalOptions, class_map, evaluate_retrieval


def test_hand_computed():
  # Query class 0; gallery classes [0, 1, 0, 1, 0], ranking 1, 0, 3, 2, 4.
  scores = np.array([[0.8, 0.9, 0.3, 0.5, 0.1]], np.float32)
  q, g = np.array([0]), np.array([0, 1, 0, 1, 0])
  # Relevant at ranks 2, 4, 5: AP = (1/2 + 2/4 + 3/5) / 3.
  assert class_map(scores, q, g) == pytest.approx((0.5 + 0.5 + 0.6) / 3)
  # Top 3: one relevant at rank 2 -> AP@3 = (1/2) / 1.
  assert class_map(scores, q, g, k=3) == pytest.approx(0.5)


def test_matches_sklearn_average_precision():
  sklearn_metrics = pytest.importorskip("sklearn.metrics")
  rng = np.random.default_rng(0)
  scores = rng.standard_normal((20, 70)).astype(np.float32)
  ql = rng.random((20, 4)) < 0.3  # multi-label memberships
  gl = rng.random((70, 4)) < 0.3
  relevant = (ql.astype(int) @ gl.T.astype(int)) > 0
  want = np.mean(
    [
      sklearn_metrics.average_precision_score(relevant[i], scores[i])
      for i in range(20)
      if relevant[i].any()
    ]
  )
  assert class_map(scores, ql, gl, chunk_size=6) == pytest.approx(want, abs=1e-9)


def test_ties_use_index_order():
  scores = np.array([[1.0, 1.0, 1.0, 0.0]], np.float32)
  # Ranking 0, 1, 2, 3; relevant items 1 and 3 -> AP = (1/2 + 2/4) / 2.
  assert class_map(scores, np.array([1]), np.array([0, 1, 0, 1])) == pytest.approx(0.5)


def test_in_the_suite_both_directions():
  rng = np.random.default_rng(1)
  sim = rng.standard_normal((12, 36)).astype(np.float32)
  owner = np.repeat(np.arange(12), 3)
  labels = rng.integers(0, 3, 12)
  m = evaluate_retrieval(
    sim, caption_to_image=owner, labels=ClassLabels(labels), options=EvalOptions(percent=False)
  )
  assert m["class/i2t/mAP"] == pytest.approx(class_map(sim, labels, labels[owner]))
  assert m["class/t2i/mAP"] == pytest.approx(class_map(sim.T, labels[owner], labels))
  assert m["class/mAP"] == pytest.approx((m["class/i2t/mAP"] + m["class/t2i/mAP"]) / 2)
