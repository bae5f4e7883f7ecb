"""CVSE's evaluation-time label completion and mixed similarity against a step-by-step
transcription of the official ``evaluation.py`` (BruceW91/CVSE @ ab948b7) and
``util/utils.py`` (@ d4a0b4e), on random embeddings in the official layout (5 rows per
image, caption ``i`` of image ``i // 5``)."""

from __future__ import annotations

import numpy as np
import pytest

from jitr.evaluation.positives import positives_from_owner
from jitr.evaluation.ranks import best_positive_ranks
from jitr.evaluation.recall import recall_at_k
from jitr.evaluation.sources import DenseScores
from jitr.models.cvse.completion import (
  _window_start,
  caption_neighbours_t2t,
  complete_labels,
  completion_neighbours,
  image_ranking_neighbours,
  mixed_similarity,
)

# The official code, transcribed (numpy for torch: `torch.Tensor(x)` is float32,
# `torch.sort(descending=True)` a stable argsort of the negated row).


def official_construct_h_index(cap_embs, k_neig=10):
  """``construct_H_with_KNN(torch.Tensor(cap_embs), K_neigs=10, return_index=True)``."""
  x = np.asarray(cap_embs, np.float32)
  dist = x @ x.T  # Cos_dis: cosine_sim(x, x) ...
  dist = np.maximum(dist, dist.T)  # ... then max with its transpose
  index = np.zeros((x.shape[0], k_neig), np.float32)
  for center in range(x.shape[0]):
    dist[center, center] = 0
    row = dist[center]
    nearest = np.argsort(-row, kind="stable")
    index[center] = nearest[:k_neig]
  return index


def official_calculate_sim(img_emb, cap_emb):
  full = np.dot(img_emb, cap_emb.T)
  n_img = img_emb.shape[0] // 5
  out = np.zeros((n_img, n_img * 5))
  for j in range(n_img):
    out[j] = full[j * 5]
  return out


def official_construct_n(mat, k_neigs=3, branches=None):
  """``construct_N_with_KNN``; ``branches`` (a list) records the branch of each caption."""
  order_t2i = np.argsort(-mat, 0)
  order_i2t = np.argsort(-mat, 1)
  out = np.zeros((mat.shape[1], k_neigs))
  interval = int(k_neigs / 2)
  for i in range(mat.shape[1]):
    nearest_img = order_t2i[0, i]
    cand = order_i2t[nearest_img]
    pos = np.where(cand == i)[0][0]
    if pos < cand.shape[0] - k_neigs:
      if k_neigs == 3 and pos > 1:
        out[i] = cand[pos - 1 : pos + 2]
        branch = "centred"
      elif k_neigs > 3 and k_neigs % 2 == 0:
        out[i] = cand[pos - interval : pos + interval]
        branch = "even"
      elif k_neigs > 3 and k_neigs % 2 != 0:
        out[i] = cand[pos - interval - 1 : pos + interval]
        branch = "odd"
      else:
        out[i] = cand[:k_neigs]
        branch = "top"
    else:
      out[i] = cand[-k_neigs:]
      branch = "end"
    if branches is not None:
      branches.append(branch)
  return out


def official_label_complete(img_embs, cap_embs, data_name, branches=None):
  """``label_complete`` (its ``concept_label`` argument is unused)."""
  a_all = official_construct_h_index(cap_embs, 10)
  mat = official_calculate_sim(img_embs, cap_embs)
  b_all = official_construct_n(mat, 3, branches)
  result = []
  for i in range(len(a_all)):
    a = [int(e) for e in a_all[i]]
    b = [int(e) for e in b_all[i]]
    tmp = [v for v in a if v in b]
    if len(tmp) < 3 or tmp == []:
      if branches is not None:
        branches.append("fallback")
      if "f30k" in data_name or data_name == "f30k":
        tmp = a[:3] + b[:4]
      elif "coco" in data_name or data_name == "coco":
        tmp = a[:2] + b[:1]
    elif branches is not None:
      branches.append("common")
    result.append(tmp)
  return result


def official_complete(concept_labels, index_knn):
  """The completion loop of ``encode_data_KNN_rerank`` (one batch holding every caption)."""
  complete = concept_labels.copy()
  for j in range(concept_labels.shape[0]):
    neigh = index_knn[j]
    neigh.append(j)
    complete[j] = concept_labels[neigh].max(axis=0)
  return complete


def official_i2t_sep_sim(images, captions, img_cons, cap_cons, weight_fused):
  npts = images.shape[0] // 5
  ranks = np.zeros(npts)
  for index in range(npts):
    im = images[5 * index].reshape(1, images.shape[1])
    im_cons = img_cons[5 * index].reshape(1, images.shape[1])
    d_inst = np.dot(im, captions.T).flatten()
    d_cons = np.dot(im_cons, cap_cons.T).flatten()
    d = weight_fused * d_inst + (1 - weight_fused) * d_cons
    inds = np.argsort(d)[::-1]
    rank = 1e20
    for i in range(5 * index, 5 * index + 5):
      tmp = np.where(inds == i)[0][0]
      if tmp < rank:
        rank = tmp
    ranks[index] = rank
  r1 = 100.0 * len(np.where(ranks < 1)[0]) / len(ranks)
  r5 = 100.0 * len(np.where(ranks < 5)[0]) / len(ranks)
  r10 = 100.0 * len(np.where(ranks < 10)[0]) / len(ranks)
  return (r1, r5, r10), ranks


def official_t2i_sep_sim(images, captions, img_cons, cap_cons, weight_fused):
  npts = images.shape[0] // 5
  ims_inst = np.array([images[i] for i in range(0, len(images), 5)])
  ims_cons = np.array([img_cons[i] for i in range(0, len(img_cons), 5)])
  ranks = np.zeros(5 * npts)
  for index in range(npts):
    d_inst = np.dot(captions[5 * index : 5 * index + 5], ims_inst.T)
    d_cons = np.dot(cap_cons[5 * index : 5 * index + 5], ims_cons.T)
    d = weight_fused * d_inst + (1 - weight_fused) * d_cons
    inds = np.zeros(d.shape)
    for i in range(len(inds)):
      inds[i] = np.argsort(d[i])[::-1]
      ranks[5 * index + i] = np.where(inds[i] == index)[0][0]
  r1 = 100.0 * len(np.where(ranks < 1)[0]) / len(ranks)
  r5 = 100.0 * len(np.where(ranks < 5)[0]) / len(ranks)
  r10 = 100.0 * len(np.where(ranks < 10)[0]) / len(ranks)
  return (r1, r5, r10), ranks


# Random data in the official layout.


def _embeddings(seed, n_img, dim, spread=True):
  """``(img_per_image [Ni, D], img_rows [5 Ni, D], caps [5 Ni, D])``, float32 values in
  float64 arrays (as ``encode_data`` stores them); caption norms spread over [0.05, 1]
  and the last two captions opposite every image, so that some captions sit at the end
  of their nearest image's ranking."""
  rng = np.random.default_rng(seed)
  img = rng.standard_normal((n_img, dim)).astype(np.float32)
  cap = np.repeat(img, 5, axis=0) * 0.5 + rng.standard_normal((5 * n_img, dim)).astype(np.float32)
  if spread:
    cap = cap * rng.uniform(0.05, 1.0, (5 * n_img, 1)).astype(np.float32)
    cap[-2:] = np.outer([-2.0, -2.5], img.sum(0))  # opposite every image: ranked last
  img, cap = img.astype(np.float64), cap.astype(np.float64)
  return img, np.repeat(img, 5, axis=0), cap


CASES = [
  (seed, n_img, dim)
  for seed, (n_img, dim) in enumerate([(3, 4), (3, 8), (4, 6), (20, 16), (60, 32)])
]


@pytest.mark.parametrize("dataset", ["f30k", "coco"])
@pytest.mark.parametrize("case", CASES)
def test_neighbours_and_labels_match_official(case, dataset):
  seed, n_img, dim = case
  img, img_rows, cap = _embeddings(seed, n_img, dim)
  want = official_label_complete(img_rows, cap, f"{dataset}_precomp")
  got = completion_neighbours(cap, img, dataset)
  assert got == want
  assert all(type(j) is int for row in got for j in row)
  labels = (np.random.default_rng(seed + 100).random((cap.shape[0], 12)) < 0.15).astype(np.float64)
  np.testing.assert_array_equal(complete_labels(labels, got), official_complete(labels, want))


def test_every_official_branch_is_hit():
  branches = []
  for seed, n_img, dim in CASES:
    img, img_rows, cap = _embeddings(seed, n_img, dim)
    official_label_complete(img_rows, cap, "f30k", branches)
  assert {"top", "centred", "end", "common", "fallback"} <= set(branches)


@pytest.mark.parametrize("case", CASES)
def test_searches_match_official(case):
  seed, n_img, dim = case
  img, img_rows, cap = _embeddings(seed, n_img, dim)
  np.testing.assert_array_equal(caption_neighbours_t2t(cap), official_construct_h_index(cap))
  mat = official_calculate_sim(img_rows, cap)
  np.testing.assert_allclose(mat, img @ cap.T, rtol=1e-12)  # BLAS blocking: last bits
  for k in (1, 2, 3):
    np.testing.assert_array_equal(image_ranking_neighbours(mat, k), official_construct_n(mat, k))
  b = image_ranking_neighbours(mat, 3)
  assert (b == np.arange(len(b))[:, None]).any(axis=1).all()  # k = 3: i is in B(i)


@pytest.mark.parametrize("k", [4, 5, 6, 7])
def test_long_windows_match_official_slices(k):
  # The k > 3 windows (unreachable officially for n > k, see the docstring), by position.
  n, h = 12, k // 2
  for p in range(n):
    if p >= n - k:
      want = list(range(n)[-k:])
    elif k % 2 == 0:
      want = list(range(n)[p - h : p + h])
    else:
      want = list(range(n)[p - h - 1 : p + h])
    start = int(_window_start(np.array([p]), n, k)[0])
    if len(want) == k:
      assert list(range(start, start + k)) == want
    else:
      assert start < 0 and want == []


def test_caption_is_its_own_neighbour_only_below_zero_similarities():
  # Caption 0's similarities to the others: 0.5, -0.2, 0.3 (its own replaced by 0).
  cap = np.array([[1.0, 0.0], [0.5, 0.1], [-0.2, 1.0], [0.3, -1.0]])
  np.testing.assert_array_equal(caption_neighbours_t2t(cap, 3)[0], [1, 3, 0])
  np.testing.assert_array_equal(caption_neighbours_t2t(cap, 4)[0], [1, 3, 0, 2])
  # The chunked search (blocks of 1024 rows) and its exact top-k agree with a full sort.
  rng = np.random.default_rng(7)
  big = np.round(rng.standard_normal((1100, 3)), 1)  # many exact ties
  s = big.astype(np.float32) @ big.astype(np.float32).T
  np.fill_diagonal(s, 0)
  np.testing.assert_array_equal(
    caption_neighbours_t2t(big, 10), np.argsort(-s, axis=1, kind="stable")[:, :10]
  )


def test_window_cases_by_hand():
  # One image; ranking of the 6 captions: 5, 4, 3, 2, 1, 0.
  s = np.arange(6.0)[None]
  got = image_ranking_neighbours(s, 3)
  np.testing.assert_array_equal(got[5], [5, 4, 3])  # p = 0: the top three
  np.testing.assert_array_equal(got[4], [5, 4, 3])  # p = 1: top three = centred
  np.testing.assert_array_equal(got[3], [4, 3, 2])  # p = 2: centred
  for c in (2, 1, 0):  # p = 3, 4, 5 >= n - 3: the last three
    np.testing.assert_array_equal(got[c], [2, 1, 0])
  np.testing.assert_array_equal(image_ranking_neighbours(s, 2)[0], [1, 0])  # end
  np.testing.assert_array_equal(image_ranking_neighbours(s, 2)[2], [5, 4])  # top, no 2
  # k == n: everyone gets the whole ranking; k > 3 near the top fails as officially.
  np.testing.assert_array_equal(image_ranking_neighbours(s, 6)[2], [5, 4, 3, 2, 1, 0])
  for k in (4, 5):
    with pytest.raises(ValueError, match="k > 3"):
      image_ranking_neighbours(s, k)
    with pytest.raises(ValueError, match="could not broadcast"):
      official_construct_n(s, k)


def test_complete_labels_forms_and_no_mutation():
  labels = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]], np.int8)
  ragged = [[1], [], [0, 1, 1, 3], [3]]
  want = np.array([[1, 1, 0], [0, 1, 0], [1, 1, 1], [0, 0, 0]], np.int8)
  got = complete_labels(labels, ragged)
  np.testing.assert_array_equal(got, want)
  assert got.dtype == np.int8 and ragged == [[1], [], [0, 1, 1, 3], [3]]
  with pytest.raises(ValueError, match="inhomogeneous"):
    np.array(ragged)  # numpy >= 1.24: the ragged lists cannot be an array
  square = np.array([[1, 1], [0, 0], [0, 1], [3, 3]])
  np.testing.assert_array_equal(
    complete_labels(labels, square), complete_labels(labels, square.tolist())
  )


def test_bad_input():
  img, _, cap = _embeddings(0, 3, 4)
  with pytest.raises(ValueError, match=r"\['coco', 'f30k'\]"):
    completion_neighbours(cap, img, "f30k_precomp")
  with pytest.raises(ValueError, match="k"):
    caption_neighbours_t2t(cap[:5], 10)
  with pytest.raises(ValueError, match="one row per caption"):
    complete_labels(np.zeros((3, 2)), [[0], [1]])
  with pytest.raises(ValueError, match=r"\[0, 3\)"):
    complete_labels(np.zeros((3, 2)), [[0], [1], [3]])
  with pytest.raises(ValueError, match="integers"):
    complete_labels(np.zeros((3, 2)), np.zeros((3, 1)))
  with pytest.raises(ValueError, match="finite"):
    caption_neighbours_t2t(np.full((12, 2), np.nan))
  with pytest.raises(ValueError, match="rows"):
    mixed_similarity(img, cap, img[:2], cap)


def test_mixed_similarity_by_hand():
  fi, ft = np.array([[1.0, 0.0]]), np.array([[0.5, 2.0], [1.0, 1.0]])
  ci, ct = np.array([[0.0, 1.0, 1.0]]), np.array([[1.0, 1.0, 0.0], [0.0, 0.0, -2.0]])
  got = mixed_similarity(fi, ft, ci, ct, fused_weight=0.75)
  np.testing.assert_allclose(got, [[0.75 * 0.5 + 0.25 * 1.0, 0.75 * 1.0 + 0.25 * -2.0]])
  np.testing.assert_allclose(mixed_similarity(fi, ft, ci, ct), [[0.95 * 0.5 + 0.05, 0.95 - 0.1]])


@pytest.mark.parametrize("seed, n_img", [(0, 30), (1, 80)])
def test_recalls_match_official_sep_sim(seed, n_img):
  rng = np.random.default_rng(seed)
  img, img_rows, cap = _embeddings(seed, n_img, 16, spread=False)
  cons_img = rng.standard_normal((n_img, 16))
  cons_rows, cons_cap = np.repeat(cons_img, 5, axis=0), rng.standard_normal((5 * n_img, 16))
  d = mixed_similarity(img, cap, cons_img, cons_cap)
  i2t, t2i = positives_from_owner(np.arange(5 * n_img) // 5)
  ranks_i2t, _ = best_positive_ranks(d, i2t)
  ranks_t2i, _ = best_positive_ranks(DenseScores(d, transpose=True), t2i)
  want_i2t, official_ranks_i2t = official_i2t_sep_sim(img_rows, cap, cons_rows, cons_cap, 0.95)
  want_t2i, official_ranks_t2i = official_t2i_sep_sim(img_rows, cap, cons_rows, cons_cap, 0.95)
  np.testing.assert_array_equal(ranks_i2t, official_ranks_i2t)
  np.testing.assert_array_equal(ranks_t2i, official_ranks_t2i)
  for got, want in ((ranks_i2t, want_i2t), (ranks_t2i, want_t2i)):
    r = recall_at_k(got, (1, 5, 10))
    assert [100 * r[k] for k in (1, 5, 10)] == pytest.approx(list(want), rel=1e-12)
  assert 0 < want_i2t[0] < 100 and 0 < want_t2i[0] < 100  # not a trivial case
