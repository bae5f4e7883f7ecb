"""Recall@K, ranks, RSUM / M-Recall, folds (COCO 1K) and the score sources."""

import numpy as np
import pytest

from jitr.evaluation import (
  CallableScores,
  CrossModalScores,
  DenseScores,
  EmbeddingScores,
  EvalOptions,
  best_positive_ranks,
  coco_recalls,
  evaluate_retrieval,
  mean_rank,
  median_rank,
  positives_from_owner,
  recall_at_k,
  retrieval_recall,
)
from jitr.evaluation.ranks import best_positive_ranks_reference


def test_hand_computed_two_images():
  # Images 0, 1; captions 0, 1 belong to image 0, captions 2, 3 to image 1.
  sim = np.array([[0.1, 0.9, 0.5, 0.3], [0.8, 0.2, 0.4, 0.7]], np.float32)
  owner = np.array([0, 0, 1, 1])
  i2t, t2i = positives_from_owner(owner)
  ranks, _ = best_positive_ranks(sim, i2t)
  # Image 0: caption 1 first -> rank 0. Image 1: order 0(.8), 3(.7) -> rank 1.
  np.testing.assert_array_equal(ranks, [0, 1])
  ranks_t, _ = best_positive_ranks(DenseScores(sim, transpose=True), t2i)
  # Caption 0: image 1 (.8) above image 0 (.1) -> 1; caption 1 -> 0;
  # caption 2: image 0 (.5) above image 1 (.4) -> 1; caption 3 -> 0.
  np.testing.assert_array_equal(ranks_t, [1, 0, 1, 0])
  options = EvalOptions(recall_ks=(1, 2), curve_ks=(1, 2), percent=False)
  m = evaluate_retrieval(sim, caption_to_image=owner, options=options)
  assert m["full/i2t/R@1"] == 0.5 and m["full/i2t/R@2"] == 1.0
  assert m["full/t2i/R@1"] == 0.5 and m["full/t2i/R@2"] == 1.0
  assert m["full/rsum"] == pytest.approx(3.0)
  assert m["full/mR"] == pytest.approx(0.75)
  assert m["full/i2t/medr"] == 1.0  # floor(median([0, 1])) + 1
  assert m["full/t2i/meanr"] == pytest.approx(1.5)
  r = retrieval_recall(sim, i2t, ks=(1,))
  assert r == {"R@1": 0.5, "medr": 1.0, "meanr": 1.5}


def test_ties_follow_index_order_like_stable_argsort():
  rng = np.random.default_rng(0)
  owner = np.repeat(np.arange(30), 5)
  sim = rng.integers(0, 4, (30, 150)).astype(np.float32)  # many ties
  i2t, t2i = positives_from_owner(owner)
  r, _ = best_positive_ranks(sim, i2t, chunk_size=7)  # several chunks + padding
  np.testing.assert_array_equal(r, best_positive_ranks_reference(sim, i2t))
  r, _ = best_positive_ranks(DenseScores(sim, transpose=True), t2i, chunk_size=16)
  np.testing.assert_array_equal(r, best_positive_ranks_reference(sim.T, t2i))


def test_recall_helpers():
  ranks = np.array([0, 3, -1, 9, 10])
  assert recall_at_k(ranks, (1, 4, 10)) == {1: 0.25, 4: 0.5, 10: 0.75}
  # With an explicit valid mask, valid queries without a positive are misses.
  assert recall_at_k(ranks, (10,), valid=np.ones(5, bool)) == {10: 0.6}
  assert median_rank(ranks) == 7.0  # floor(median([0, 3, 9, 10]) = 6) + 1
  assert mean_rank(ranks) == pytest.approx(22 / 4 + 1)


def test_five_folds_equal_averaging_five_separate_1k_evaluations():
  rng = np.random.default_rng(1)
  n_img, per = 50, 5
  owner = np.repeat(np.arange(n_img), per)
  rng.shuffle(owner)  # captions of a fold are not contiguous
  sim = rng.standard_normal((n_img, n_img * per)).astype(np.float32)
  sim[owner, np.arange(owner.size)] += 1.0
  ks = (1, 5, 10)
  five = evaluate_retrieval(
    sim,
    caption_to_image=owner,
    options=EvalOptions(folds=5, recall_ks=ks, curve_ks=ks, chunk_size=8),
  )
  separate = []
  for f in range(5):
    imgs = np.arange(f * 10, (f + 1) * 10)
    caps = np.flatnonzero((owner >= imgs[0]) & (owner <= imgs[-1]))
    separate.append(
      evaluate_retrieval(
        sim[np.ix_(imgs, caps)],
        caption_to_image=owner[caps] - imgs[0],
        options=EvalOptions(recall_ks=ks, curve_ks=ks),
      )
    )
  for key in five:
    if key.startswith("folds/"):
      want = np.mean([s["full/" + key.split("/", 1)[1]] for s in separate])
      assert five[key] == pytest.approx(want, abs=1e-9), key
  assert five["folds/rsum"] > five["full/rsum"]  # 1K galleries are easier
  coco = coco_recalls(sim, caption_to_image=owner, num_folds=5, ks=ks)
  assert coco["1k/rsum"] == pytest.approx(five["folds/rsum"])
  assert coco["5k/i2t/R@5"] == pytest.approx(five["full/i2t/R@5"])


def test_embedding_callable_and_memmap_sources_match_dense(tmp_path):
  rng = np.random.default_rng(2)
  img = rng.standard_normal((40, 16)).astype(np.float32)
  cap = rng.standard_normal((120, 16)).astype(np.float32)
  owner = rng.integers(0, 40, 120)
  sim = img @ cap.T
  mm = np.lib.format.open_memmap(tmp_path / "sim.npy", mode="w+", dtype=np.float32, shape=sim.shape)
  mm[:] = sim
  rel = np.clip(sim / 8 + 0.5, 0, 1).astype(np.float32)
  options = EvalOptions(folds=4, semantic_ks=(1, 3), chunk_size=16)
  kw = dict(caption_to_image=owner, relevance=rel, options=options)
  dense = evaluate_retrieval(sim, **kw)
  emb = evaluate_retrieval(CrossModalScores.from_embeddings(img, cap), **kw)
  memmap = evaluate_retrieval(mm, **kw)
  calls = CrossModalScores(
    CallableScores(lambda r: sim[r], 40, 120), CallableScores(lambda r: sim.T[r], 120, 40)
  )
  called = evaluate_retrieval(calls, **kw)
  assert dense.keys() == emb.keys() == memmap.keys() == called.keys()
  for key in dense:
    assert memmap[key] == dense[key] and called[key] == dense[key], key
    # The jitted matmul may round differently from numpy's: ranks can move
    # only through near-ties; the values here have none.
    assert emb[key] == pytest.approx(dense[key], abs=1e-4), key
  src = EmbeddingScores(img, cap)
  np.testing.assert_allclose(
    np.asarray(src.block(np.array([3, 1]))), sim[[3, 1]], rtol=1e-5, atol=1e-5
  )
