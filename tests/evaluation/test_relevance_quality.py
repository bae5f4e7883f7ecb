"""Estimated vs exact relevance: hand-computed NDCG, mAP@R, MAE and gain@0."""

import math

import numpy as np
import pytest

from jitr.evaluation.relevance_quality import ranking_quality, value_errors


def test_hand_computed_case():
  # one query, 4 candidates; the estimate ranks 0, 2, 1, 3
  est = np.array([[1.0, 0.5, 0.8, 0.2]])
  exact = np.array([[1.0, 1.0, 0.0, 0.5]])
  got = ranking_quality(est, exact, ks=(2, 10))
  # DCG@2 = 1 + 0/log2(3); IDCG@2 = 1 + 1/log2(3)
  assert got["NDCG@2"] == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-6)
  # gains (2^r - 1) in ranked order 1, 0, 1, sqrt2 - 1 vs ideal 1, 1, sqrt2 - 1, 0
  g = math.sqrt(2) - 1
  dcg = 1 + 0 / math.log2(3) + 1 / 2 + g / math.log2(5)
  idcg = 1 + 1 / math.log2(3) + g / 2
  assert got["NDCG@10"] == pytest.approx(dcg / idcg, abs=1e-6)
  # positives {0, 1}, R = 2: hits at ranks 1 and 3 -> (1/1) / 2
  assert got["mAP@R"] == pytest.approx(0.5)
  pos = np.array([[True, False, False, False]])
  errors = value_errors(est, exact, pos)
  assert errors["MAE"] == pytest.approx((0.5 + 0.8 + 0.3) / 3)
  assert errors["gain@0"] == pytest.approx(2**0.8 - 1)


def test_exact_estimate_is_perfect_and_transposes_work():
  rng = np.random.default_rng(0)
  exact = np.round(rng.random((6, 12)), 1)
  exact[:, :3] = 1.0
  for e in (exact, exact.T):
    got = ranking_quality(e, e, ks=(10,))
    assert got == {"NDCG@10": pytest.approx(1.0), "mAP@R": pytest.approx(1.0)}
  assert value_errors(exact, exact, exact >= 1) == {"MAE": 0.0, "gain@0": 0.0}


def test_shape_mismatch_is_named():
  with pytest.raises(ValueError, match=r"estimated \(2, 3\) and exact \(3, 2\)"):
    ranking_quality(np.zeros((2, 3)), np.zeros((3, 2)))
