"""Spherical k-means (cosine k-means) of unit vectors, deterministic for a seed.

Lloyd's iterations on the unit sphere: assign every point to the centroid of
largest dot product, then set each centroid to the unit-norm mean of its points
(a centroid left without points keeps its place). Initial centroids: ``k``
distinct rows drawn by ``numpy.random.default_rng(seed)``. Numpy only.
"""

from __future__ import annotations

import numpy as np

from jitr.relevance.cosine import unit_rows


def nearest_centroids(points: np.ndarray, centroids: np.ndarray, block: int = 65536) -> np.ndarray:
  """``argmax_c <x, centroid_c>`` of every row of ``points`` (ties: the lower index).

  >>> nearest_centroids(np.array([[1.0, 0.0], [0.6, 0.8]]), np.array([[0.0, 1.0], [1.0, 0.0]]))
  array([1, 0])
  """
  out = np.empty(len(points), np.int64)
  for lo in range(0, len(points), block):
    out[lo : lo + block] = np.argmax(points[lo : lo + block] @ centroids.T, axis=1)
  return out


def spherical_kmeans(
  points: np.ndarray, k: int, *, seed: int = 0, iterations: int = 25
) -> np.ndarray:
  """``[k, D]`` unit-norm centroids of the unit rows ``points [N, D]``.

  Raises:
    ValueError: fewer distinct points than ``k``, or ``k < 1``.

  >>> pts = np.array([[1.0, 0.0], [0.96, 0.28], [0.0, 1.0], [0.28, 0.96]])
  >>> sorted(np.round(spherical_kmeans(pts, 2, seed=0).astype(float), 3).tolist())  # pair means
  [[0.141, 0.99], [0.99, 0.141]]
  """
  points = unit_rows(points)
  distinct = np.unique(points, axis=0)
  if not 1 <= k <= len(distinct):
    raise ValueError(f"spherical_kmeans: k={k} needs 1 <= k <= {len(distinct)} distinct points")
  rng = np.random.default_rng(seed)
  centroids = distinct[np.sort(rng.choice(len(distinct), size=k, replace=False))]
  for _ in range(iterations):
    labels = nearest_centroids(points, centroids)
    sums = np.zeros_like(centroids)
    np.add.at(sums, labels, points)
    empty = ~np.any(sums != 0, axis=1)
    updated = np.where(empty[:, None], centroids, unit_rows(sums))
    if np.array_equal(updated, centroids):
      break
    centroids = updated
  return centroids.astype(np.float32)
