"""CVSE's concept-graph adjacency against a line-by-line transcription of the official
``util/util_C_GCN.py`` (BruceW91/CVSE @ d4a0b4e): a hand-computed 3x3 case, the real F30K
statistics, properties and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from jitr.models.cvse import graph as cvse_graph
from tests.data_folders import data_folder

KEYS = ("adj_O_P", "adj_O_M", "adj_all")


# The official code, transcribed (numpy for torch; `np.int` is `int`, removed in numpy 1.24)


def official_gen_A_concept(num_classes, t, result, gen_mode="ML_GCN"):
  """``gen_A_concept`` with the pickle's dict ``result`` passed in instead of its path."""
  _nums = result["nums"]
  _nums = _nums[:, np.newaxis]
  _A_adj = {}
  for key, value in result.items():  # noqa: B007 (sic)
    if key == "adj_O_P":
      _adj_OPC = result["adj_O_P"]
      _adj_OPC = _adj_OPC / _nums
      if gen_mode == "ML_GCN":
        _adj_OPC[_adj_OPC < t] = 0
        _adj_OPC[_adj_OPC >= t] = 1
        _adj_OPC = _adj_OPC * 0.25 / (_adj_OPC.sum(0, keepdims=True) + 1e-6)
      elif gen_mode == "My_rescale":
        _adj_OPC = official_rescale_adj_matrix(_adj_OPC)
      elif gen_mode == "Complex":
        _adj_OPC = official_rescale_adj_matrix(_adj_OPC)
        _adj_OPC[_adj_OPC < t] = 0
        _adj_OPC[_adj_OPC >= t] = 1
        _adj_OPC = _adj_OPC * 0.25 / (_adj_OPC.sum(0, keepdims=True) + 1e-6)
      _adj_OPC = _adj_OPC / (_adj_OPC.sum(0, keepdims=True) + 1e-8)
      _adj_OPC = _adj_OPC + np.identity(num_classes, int)
      _A_adj["adj_O_P"] = _adj_OPC
    elif key == "adj_O_M":
      _adj_OMC = result["adj_O_M"]
      _adj_OMC = _adj_OMC / _nums
      if gen_mode == "ML_GCN":
        _adj_OMC[_adj_OMC < t] = 0
        _adj_OMC[_adj_OMC >= t] = 1
        _adj_OPC = _adj_OMC * 0.25 / (_adj_OMC.sum(0, keepdims=True) + 1e-6)  # noqa: F841 (sic)
      elif gen_mode == "My_rescale":
        _adj_OMC = official_rescale_adj_matrix(_adj_OMC)
      elif gen_mode == "Complex":
        _adj_OMC = official_rescale_adj_matrix(_adj_OMC)
        _adj_OMC[_adj_OMC < t] = 0
        _adj_OMC[_adj_OMC >= t] = 1
        _adj_OMC = _adj_OMC * 0.25 / (_adj_OMC.sum(0, keepdims=True) + 1e-6)
      _adj_OMC = _adj_OMC / (_adj_OMC.sum(0, keepdims=True) + 1e-8)
      _adj_OMC = _adj_OMC + np.identity(num_classes, int)
      _A_adj["adj_O_M"] = _adj_OMC
    elif key == "adj_all":
      _adj_all = result["adj_all"]
      _adj_all = _adj_all / _nums
      if gen_mode == "ML_GCN":
        _adj_all[_adj_all < t] = 0
        _adj_all[_adj_all >= t] = 1
        _adj_all = _adj_all * 0.25 / (_adj_all.sum(0, keepdims=True) + 1e-6)
      elif gen_mode == "My_rescale":
        _adj_all = official_rescale_adj_matrix(_adj_all)
      elif gen_mode == "Complex":
        _adj_all = official_rescale_adj_matrix(_adj_all)
        _adj_all[_adj_all < t] = 0
        _adj_all[_adj_all >= t] = 1
        _adj_all = _adj_all * 0.25 / (_adj_all.sum(0, keepdims=True) + 1e-6)
      _adj_all = _adj_all + np.identity(num_classes, int)
      _A_adj["adj_all"] = _adj_all
  return _A_adj


def official_rescale_adj_matrix(adj_mat, t=5, p=0.02):
  adj_mat_smooth = np.power(t, adj_mat - p) - np.power(t, -p)
  return adj_mat_smooth


def official_gen_adj(A):
  """``gen_adj``; ``A`` as ``C_GCN`` holds it: ``torch.from_numpy(_adj[key]).float()``
  (float32) unless given float64."""
  D = np.power(A.sum(1).astype(A.dtype), -0.5)  # torch.pow(A.sum(1).float(), -0.5)
  D = np.diag(D)  # torch.diag(D)
  adj = np.matmul(np.matmul(A, D).T, D)  # torch.matmul(torch.matmul(A, D).t(), D)
  return adj


def pickle_dict(nums, co_occurrence) -> dict:
  """The official pickle's dict: int32 ``nums`` and the three int32 count matrices."""
  result = {"nums": np.asarray(nums, np.int32)}
  result.update({key: np.asarray(co_occurrence[key], np.int32) for key in KEYS})
  return result


# A hand-computed 3x3 case

N = np.array([[0, 2, 1], [2, 0, 4], [1, 4, 0]])  # symmetric, like adj_all
COUNTS = np.array([4, 10, 20])
# P = N / n[:, None] = [[0, .5, .25], [.2, 0, .4], [.05, .2, 0]]. Complex: 5^(P-.02) - 5^-.02
# >= 0.3  <=>  P >= 0.02 + log5(0.3 + 5^-0.02) = 0.02 + log5(1.268324) = 0.1677, so
# B = [[0, 1, 1], [1, 0, 1], [0, 1, 0]], column sums s = [1, 2, 2].
HAND_ALL = np.array([
  # adj_all = B * 0.25 / (s + 1e-6) + I
  [1.0, 0.25 / 2.000001, 0.25 / 2.000001],
  [0.25 / 1.000001, 1.0, 0.25 / 2.000001],
  [0.0, 0.25 / 2.000001, 1.0],
])  # fmt: skip
# adj_O_P / adj_O_M: then each column over its sum (0.25 s / (s + 1e-6)) + 1e-8, about B / s:
HAND_O = np.array([[1.0, 0.5, 0.5], [1.0, 1.0, 0.5], [0.0, 0.5, 1.0]])
# gen_adj(about [[1, .125, .125], [.25, 1, .125], [0, .125, 1]]): row sums r = [1.25, 1.375,
# 1.125], out_ij = A_ji / sqrt(r_i r_j)
HAND_NORMALIZED = np.array([
  [1 / 1.25, 0.25 / np.sqrt(1.25 * 1.375), 0.0],
  [0.125 / np.sqrt(1.25 * 1.375), 1 / 1.375, 0.125 / np.sqrt(1.375 * 1.125)],
  [0.125 / np.sqrt(1.25 * 1.125), 0.125 / np.sqrt(1.375 * 1.125), 1 / 1.125],
])  # fmt: skip


def test_the_hand_computed_case():
  co = {"adj_O_P": N, "adj_O_M": N, "adj_all": N}
  reference = official_gen_A_concept(3, 0.3, pickle_dict(COUNTS, co), gen_mode="Complex")
  ours = cvse_graph.official_adjacencies(co, COUNTS)
  assert list(ours) == list(KEYS)
  np.testing.assert_allclose(ours["adj_all"], HAND_ALL, rtol=1e-15, atol=0)
  np.testing.assert_allclose(ours["adj_O_P"], HAND_O, rtol=1e-7, atol=0)
  for key in KEYS:
    assert ours[key].dtype == np.float64
    np.testing.assert_allclose(ours[key], reference[key], rtol=1e-15, atol=0)
  normalized = cvse_graph.normalized_adjacency(ours["adj_all"])
  np.testing.assert_allclose(normalized, HAND_NORMALIZED, rtol=1e-5, atol=0)
  np.testing.assert_allclose(normalized, official_gen_adj(reference["adj_all"]), rtol=1e-14)
  np.testing.assert_allclose(
    normalized, official_gen_adj(reference["adj_all"].astype(np.float32)), rtol=1e-6
  )
  # the steps, by hand
  p = cvse_graph.conditional_probabilities(N, COUNTS)
  np.testing.assert_array_equal(p, [[0, 0.5, 0.25], [0.2, 0, 0.4], [0.05, 0.2, 0]])
  assert cvse_graph.rescaled_adjacency(p)[0, 0] == 0.0
  assert cvse_graph.rescaled_adjacency(np.ones((1, 1)))[0, 0] == pytest.approx(
    5**0.98 - 5**-0.02, rel=1e-15
  )
  np.testing.assert_array_equal(cvse_graph.thresholded_adjacency(p, 0.2) > 0, p >= 0.2)


@pytest.mark.parametrize("mode", ["Complex", "ML_GCN", "My_rescale"])
@pytest.mark.parametrize("threshold", [0.3, 0.2, 0.0, -1.0])
def test_every_mode_and_key_as_the_official_code(mode, threshold):
  rng = np.random.default_rng(0)
  counts = rng.integers(20, 60, 6)
  co = {key: rng.integers(0, 20, (6, 6)) for key in KEYS}
  reference = official_gen_A_concept(6, threshold, pickle_dict(counts, co), gen_mode=mode)
  for key in KEYS:
    ours = cvse_graph.concept_adjacency(co[key], counts, threshold=threshold, mode=mode, key=key)
    np.testing.assert_allclose(ours, reference[key], rtol=1e-15, atol=1e-300)
  if mode == "ML_GCN":  # the typo: adj_O_M is the 0/1 matrix, column-normalised
    b = cvse_graph.conditional_probabilities(co["adj_O_M"], counts) >= threshold
    np.testing.assert_allclose(reference["adj_O_M"], b / (b.sum(0) + 1e-8) + np.eye(6))
  if threshold <= 0:  # `< t` -> 0 then `>= t` -> 1 sets every entry to 1
    all_ones = cvse_graph.concept_adjacency(co["adj_all"], counts, threshold=threshold)
    np.testing.assert_allclose(all_ones, 0.25 / (6 + 1e-6) + np.eye(6), rtol=1e-15)


# The real F30K statistics


@pytest.fixture(scope="module")
def f30k():
  folder = data_folder("JITR_OFFICIAL_DATA", "official", "cvse_f30k", "official CVSE files")
  from jitr.data import cvse_concepts

  return cvse_concepts.read_concept_statistics(folder / "cvse_f30k" / "f30k_adj_concepts.pkl")


def test_the_real_f30k_statistics(f30k):
  reference = official_gen_A_concept(
    300, 0.3, pickle_dict(f30k.counts, f30k.co_occurrence), gen_mode="Complex"
  )
  ours = cvse_graph.official_adjacencies(f30k.co_occurrence, f30k.counts)
  for key in KEYS:
    adjacency = ours[key]
    assert adjacency.shape == (300, 300) and np.isfinite(adjacency).all()
    np.testing.assert_allclose(adjacency, reference[key], rtol=1e-15, atol=0)
    np.testing.assert_array_equal(np.diag(adjacency), 1.0)  # diag(N) = 0, plus the identity
    normalized = cvse_graph.normalized_adjacency(adjacency)
    assert np.isfinite(normalized).all()
    official = official_gen_adj(reference[key].astype(np.float32))  # as C_GCN.forward
    np.testing.assert_allclose(normalized, official, rtol=2e-6, atol=1e-7)
  edges = ours["adj_all"] - np.eye(300)
  sums = (edges > 0).sum(0)
  np.testing.assert_allclose(edges.sum(0), 0.25 * sums / (sums + 1e-6), rtol=1e-12)
  assert not np.allclose(ours["adj_all"], ours["adj_all"].T)  # N symmetric, A is not
  assert ours["adj_O_P"][270:].sum() == 30  # no O_P row for motion concepts: identity only


# Properties


def test_a_symmetric_graph_stays_symmetric_where_the_code_implies_it():
  rng = np.random.default_rng(1)
  a = rng.uniform(0, 1, (5, 5))
  a = a + a.T + np.eye(5)
  out = cvse_graph.normalized_adjacency(a)  # D A^T D: symmetric for symmetric A
  np.testing.assert_allclose(out, out.T, rtol=1e-15)
  np.testing.assert_allclose(out, official_gen_adj(a), rtol=1e-15)
  # equal counts and as many edges in every column: gen_A_concept keeps the symmetry
  ring = np.roll(np.eye(5), 1, 1) + np.roll(np.eye(5), -1, 1)
  for key in KEYS:
    adjacency = cvse_graph.concept_adjacency(ring * 40, np.full(5, 50), key=key)
    np.testing.assert_array_equal(adjacency, adjacency.T)
  # the hand case: symmetric counts N, unequal n, so asymmetric A
  assert not np.array_equal(HAND_ALL, HAND_ALL.T)


# Bad input: one ValueError line naming what was expected


def one_line(function, *args, **kwargs) -> str:
  with pytest.raises(ValueError) as info:
    function(*args, **kwargs)
  message = str(info.value)
  assert "\n" not in message and "expected" in message, message
  return message


def test_bad_input():
  graph = cvse_graph
  square = "expected a square matrix [C, C]"
  assert square in one_line(graph.concept_adjacency, np.ones((2, 3)), [1, 1])
  assert square in one_line(graph.normalized_adjacency, np.ones(3))
  assert square in one_line(graph.rescaled_adjacency, np.ones((0, 0)))
  assert "expected 3 real counts" in one_line(graph.concept_adjacency, N, [1, 2])
  assert "expected counts > 0" in one_line(graph.concept_adjacency, N, [4, 0, 20])
  assert "expected counts > 0" in one_line(graph.conditional_probabilities, N, [4, -1, 20])
  assert ">= 0" in one_line(graph.concept_adjacency, -N, COUNTS)
  assert ">= 0" in one_line(graph.thresholded_adjacency, np.full((2, 2), np.nan))
  assert "real numbers" in one_line(graph.concept_adjacency, N.astype(str), COUNTS)
  assert "Complex, ML_GCN" in one_line(graph.concept_adjacency, N, COUNTS, mode="C_GCN")
  assert "adj_O_P, adj_O_M" in one_line(graph.concept_adjacency, N, COUNTS, key="adj")
  assert "real number" in one_line(graph.concept_adjacency, N, COUNTS, threshold="0.3")
  assert "finite" in one_line(graph.thresholded_adjacency, N, float("nan"))
  assert "positive row sums" in one_line(graph.normalized_adjacency, np.zeros((2, 2)))
  co = {"adj_O_P": N, "adj_all": N}
  assert "exactly adj_O_P" in one_line(graph.official_adjacencies, co, COUNTS)
  assert "exactly adj_O_P" in one_line(graph.official_adjacencies, [N, N, N], COUNTS)


def test_a_zero_count_the_official_code_turns_into_nan():
  zero_row = N * [[1], [0], [1]]  # a true count of 0: the concept co-occurs with none
  co = {key: zero_row for key in KEYS}
  with np.errstate(divide="ignore", invalid="ignore"):
    reference = official_gen_A_concept(3, 0.3, pickle_dict([4, 0, 20], co), "Complex")
  assert np.isnan(reference["adj_all"]).all()  # 0 / 0 survives `< t` and `>= t`
  one_line(cvse_graph.official_adjacencies, co, [4, 0, 20])
