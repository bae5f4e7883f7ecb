"""The official protocol against a transcription of the official ``evaluation.py`` (``i2t``,
``t2i``, ``evalrank``'s five COCO folds), on similarity matrices full of exact ties, where
jitr's own ranks (ties broken by the lower index) give other numbers."""

from __future__ import annotations

import numpy as np
import pytest

from jitr import evaluation
from jitr.evaluation import official


def reference_i2t(sims):
  """Paranioar/SGRAF ``evaluation.i2t`` (also VSE++'s and VSRN's), line by line."""
  npts = sims.shape[0]
  ranks = np.zeros(npts)
  for index in range(npts):
    inds = np.argsort(sims[index])[::-1]
    rank = 1e20
    for i in range(5 * index, 5 * index + 5, 1):
      tmp = np.where(inds == i)[0][0]
      if tmp < rank:
        rank = tmp
    ranks[index] = rank
  r1 = 100.0 * len(np.where(ranks < 1)[0]) / len(ranks)
  r5 = 100.0 * len(np.where(ranks < 5)[0]) / len(ranks)
  r10 = 100.0 * len(np.where(ranks < 10)[0]) / len(ranks)
  return r1, r5, r10, np.floor(np.median(ranks)) + 1, ranks.mean() + 1


def reference_t2i(sims):
  npts = sims.shape[0]
  ranks = np.zeros(5 * npts)
  sims = sims.T
  for index in range(npts):
    for i in range(5):
      inds = np.argsort(sims[5 * index + i])[::-1]
      ranks[5 * index + i] = np.where(inds == index)[0][0]
  r1 = 100.0 * len(np.where(ranks < 1)[0]) / len(ranks)
  r5 = 100.0 * len(np.where(ranks < 5)[0]) / len(ranks)
  r10 = 100.0 * len(np.where(ranks < 10)[0]) / len(ranks)
  return r1, r5, r10, np.floor(np.median(ranks)) + 1, ranks.mean() + 1


def reference_fold5(sims):
  """``evalrank(..., fold5=True)``'s ``results`` rows and their mean (its ``mean_metrics``)."""
  n = sims.shape[0] // 5
  results = []
  for i in range(5):
    shard = sims[i * n : (i + 1) * n, i * 5 * n : (i + 1) * 5 * n]
    r, ri = reference_i2t(shard), reference_t2i(shard)
    ar, ari = (r[0] + r[1] + r[2]) / 3, (ri[0] + ri[1] + ri[2]) / 3
    results += [list(r) + list(ri) + [ar, ari, r[0] + r[1] + r[2] + ri[0] + ri[1] + ri[2]]]
  return results, tuple(np.array(results).mean(axis=0).flatten())


NAMES = [f"{d}/{m}" for d in ("i2t", "t2i") for m in ("R@1", "R@5", "R@10", "medr", "meanr")]


def tied(num_images: int, levels: int, seed: int) -> np.ndarray:
  """Scores drawn from ``levels`` values: most of a row ties with something."""
  rng = np.random.default_rng(seed)
  return rng.integers(0, levels, size=(num_images, 5 * num_images)).astype(np.float32) / levels


@pytest.mark.parametrize(("num_images", "levels", "seed"), [(12, 3, 0), (30, 4, 1), (50, 2, 2)])
def test_official_recall_is_the_official_code_on_tied_scores(num_images, levels, seed):
  sims = tied(num_images, levels, seed).astype(np.float64)
  got = official.official_recall(sims)
  want = dict(zip(NAMES, reference_i2t(sims) + reference_t2i(sims)))
  for name, value in want.items():
    assert got[name] == value, name
  assert got["rsum"] == sum(want[f"{d}/R@{k}"] for d in ("i2t", "t2i") for k in (1, 5, 10))


def _jitr_recall(sims) -> dict:
  metrics = evaluation.evaluate_retrieval(sims, caption_to_image=np.arange(sims.shape[1]) // 5)
  return {name: metrics[f"full/{name}"] for name in NAMES}


def test_the_same_ties_give_other_numbers_under_jitrs_lower_index_rule():
  sims = tied(50, 2, 2)
  got = official.official_recall(sims)
  assert any(_jitr_recall(sims)[name] != pytest.approx(got[name]) for name in NAMES)
  # without ties the two rules agree
  distinct = np.random.default_rng(3).permutation(50 * 250).reshape(50, 250).astype(np.float32)
  got = official.official_recall(distinct)
  for name, value in _jitr_recall(distinct).items():
    assert got[name] == pytest.approx(value, abs=1e-4), name


def test_five_folds_are_the_official_coco_1k_means_and_folds():
  sims = tied(60, 3, 4).astype(np.float64)
  results, means = reference_fold5(sims)
  got = official.official_fold5_recall(sims)
  for f, row in enumerate(results):
    for name, value in zip(NAMES, row[:10]):
      assert got[f"fold{f}/{name}"] == value, (f, name)
    assert got[f"fold{f}/rsum"] == pytest.approx(row[12], abs=1e-12)
  for name, value in zip(NAMES, means[:10]):
    assert got[name] == pytest.approx(value, abs=1e-12), name
  # the official printout's "rsum" is 6 x its mean i2t recall, not the mean rsum
  assert got["rsum"] == pytest.approx(means[12], abs=1e-12)
  assert means[10] * 6 != pytest.approx(means[12])


def test_a_matrix_without_five_captions_per_image_is_refused():
  with pytest.raises(ValueError, match=r"^sim: expected \[N images, 5N captions\]"):
    official.official_recall(np.zeros((3, 14)))
  with pytest.raises(ValueError, match=r"^sim: 12 images do not split into 5 folds$"):
    official.official_fold5_recall(np.zeros((12, 60)))
