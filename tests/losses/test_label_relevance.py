"""Relevance from class labels: the Jaccard overlap of two label sets and whether they share
a class, against numpy on random multi-label memberships (empty sets included)."""

import numpy as np

from jitr.losses import relevance_from_labels, shares_a_label


def numpy_jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  """``|A_i ∩ B_j| / |A_i ∪ B_j|`` by sets, 0 for two empty sets."""
  out = np.zeros((len(a), len(b)))
  for i, row in enumerate(a):
    for j, col in enumerate(b):
      both, either = np.sum(row & col), np.sum(row | col)
      out[i, j] = both / either if either else 0.0
  return out


def test_label_overlap_is_the_jaccard_index_of_the_label_sets():
  rng = np.random.default_rng(0)
  a = rng.random((7, 5)) < 0.4
  b = rng.random((9, 5)) < 0.4
  a[0] = False  # an image without a class
  b[1] = False
  want = numpy_jaccard(a, b)
  assert want[0, 1] == 0.0 and 0 < want.max() and want[(a @ b.T) > 0].min() > 0
  np.testing.assert_allclose(relevance_from_labels(a, b), want, atol=1e-6)
  np.testing.assert_allclose(relevance_from_labels(a.astype(np.uint8), b), want, atol=1e-6)
  positives = np.zeros((7, 9), bool)
  positives[2, 3] = True
  np.testing.assert_allclose(
    relevance_from_labels(a, b, positives=positives), np.where(positives, 1.0, want), atol=1e-6
  )
  np.testing.assert_array_equal(shares_a_label(a, b), (a.astype(int) @ b.T.astype(int)) > 0)


def test_one_label_each_gives_same_class_relevance():
  ids = np.array([0, 2, 2, 1])
  one_hot = np.eye(3, dtype=bool)[ids]
  np.testing.assert_array_equal(relevance_from_labels(one_hot, one_hot), ids[:, None] == ids)
