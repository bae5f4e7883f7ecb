"""Non-finite scores are never a result: NaN ranks worst in every metric path.

Convention (jitr.evaluation.engine): NaN sorts below every score, -inf
included; a best positive scored NaN gets rank G (not retrieved); a NaN item
in a top-k is neither a hit nor a gain; class AP ranks NaN items last, the
relevant ones after the others. ``evaluate_retrieval`` reports the count of
non-finite entries as ``nonfinite_scores``.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jitr.evaluation import (
  ClassLabels,
  EvalOptions,
  best_positive_ranks,
  class_map,
  evaluate_retrieval,
  extended_metrics,
  ndcg_at_k,
  positives_from_lists,
  retrieval_recall,
  semantic_metrics,
)
from jitr.evaluation.ranks import best_positive_ranks_reference

NAN, INF = float("nan"), float("inf")


def test_recall_nan_positive_is_not_retrieved_and_nan_ranks_below_minus_inf():
  scores = np.array(
    [
      [NAN, 0.0, 0.0, 0.0],  # positive 0 is NaN: rank G = 4
      [0.5, 0.9, NAN, -INF],  # positive 1 first: NaN never precedes it
      [NAN, NAN, -INF, NAN],  # positive 2 (-inf) still beats the NaNs
      [NAN, -5.0, 1.0, 2.0],  # positives {0, 1}: best is 1 (finite), rank 2
    ],
    np.float32,
  )
  pos = positives_from_lists([[0], [1], [2], [0, 1]], num_gallery=4)
  ranks, _ = best_positive_ranks(scores, pos)
  np.testing.assert_array_equal(ranks, [4, 0, 0, 2])
  np.testing.assert_array_equal(best_positive_ranks_reference(scores, pos), [4, 0, 0, 2])
  m = retrieval_recall(scores, pos, ks=(1, 3, 4))
  assert m["R@1"] == pytest.approx(2 / 4)
  assert m["R@3"] == pytest.approx(3 / 4)
  assert m["R@4"] == pytest.approx(3 / 4)
  assert m["medr"] == 2.0  # floor(median(4, 0, 0, 2) = 1) + 1
  assert m["meanr"] == pytest.approx(6 / 4 + 1)


def test_sub_gallery_rank_of_a_nan_positive_is_the_group_size():
  scores = np.array([[NAN, 0.1, 0.2, 0.3], [0.1, 0.2, NAN, NAN]], np.float32)
  pos = positives_from_lists([[0], [3]], num_gallery=4)
  contiguous = np.array([[1, 1, 0, 0], [0, 0, 1, 1]], bool)
  strided = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 0]], bool)
  for groups, of_query, group_ranks in (
    (contiguous, [0, 1], [2, 2]),
    (strided, [2, 1], [3, 2]),
  ):
    ranks, sub = best_positive_ranks(scores, pos, groups=groups, group_of_query=np.array(of_query))
    np.testing.assert_array_equal(ranks, [4, 4])
    np.testing.assert_array_equal(sub, group_ranks)


def test_map_at_r_nan_items_are_last_and_never_hits():
  pos = positives_from_lists([[0, 1]] * 3, num_gallery=4)
  scores = np.array(
    [
      [NAN, 0.5, 0.9, 0.1],  # ranking 2, 1, 3, 0: hits F, T
      [NAN, NAN, 0.1, 0.2],  # ranking 3, 2, then NaNs: no hit, best positive NaN
      [NAN, NAN, NAN, 0.2],  # top-2 = 3, 0 but 0 is NaN: no hit
    ],
    np.float32,
  )
  m = extended_metrics(scores, pos, ks=(1, 2, 4))
  assert m["mAP@R"] == pytest.approx((0.5 * 0.5 + 0 + 0) / 3)
  assert m["R-P"] == pytest.approx((0.5 + 0 + 0) / 3)
  assert m["R@1"] == 0.0
  assert m["R@2"] == pytest.approx(1 / 3)
  assert m["R@4"] == pytest.approx(1 / 3)
  equal = extended_metrics(np.zeros((3, 4), np.float32), pos, ks=(1, 2))
  nan = extended_metrics(np.full((3, 4), NAN, np.float32), pos, ks=(1, 2))
  assert nan == {"R@1": 0.0, "R@2": 0.0, "mAP@R": 0.0, "R-P": 0.0}
  assert equal["mAP@R"] == 1.0 and all(nan[k] <= equal[k] for k in nan)


def test_ndcg_nan_items_give_no_gain():
  rel = np.array([[1.0, 0.0, 1.0]])
  scores = np.array([[NAN, 0.9, 0.1]], np.float32)  # ranking 1, 2, 0 (0 is NaN)
  m = ndcg_at_k(scores, rel, ks=(1, 2, 3))
  d = 1 / math.log2(3)
  assert m["NDCG@1"] == 0.0
  assert m["NDCG@2"] == pytest.approx(d / (1 + d))
  assert m["NDCG@3"] == pytest.approx(d / (1 + d))  # item 0 would add 1/2 if credited
  nan = ndcg_at_k(np.full((1, 3), NAN, np.float32), rel, ks=(1, 2, 3))
  equal = ndcg_at_k(np.zeros((1, 3), np.float32), rel, ks=(1, 2, 3))
  assert nan == {"NDCG@1": 0.0, "NDCG@2": 0.0, "NDCG@3": 0.0}
  assert equal["NDCG@1"] == 1.0


def test_semantic_nan_items_give_no_credit_and_annotated_stay_removed():
  phi = np.array([[5.0, 0.0, 1.0, 3.0, 2.0, 4.0]])
  pos = positives_from_lists([[0]], num_gallery=6)
  scores = np.array([[0.9, 0.1, NAN, 0.5, 0.7, 0.2]], np.float32)  # 4, 3, 5, 1, 2
  m = semantic_metrics(scores, phi, pos, ks=(2,))
  assert m["NCS@2"] == pytest.approx((2 + 3) / (4 + 3))
  assert m["SR@2"] == 0.0
  # All NaN but the annotated item: the five retrieved items are NaN (no
  # credit); the annotated item 0 (phi 5) must not come back either.
  scores = np.array([[0.9] + [NAN] * 5], np.float32)
  m = semantic_metrics(scores, phi, pos, ks=(2, 5), num_relevant=1)
  assert m == {"NCS@2": 0.0, "SR@2": 0.0, "NCS@5": 0.0, "SR@5": 0.0}
  m = semantic_metrics(np.full((1, 6), NAN, np.float32), phi, pos, ks=(5,))
  assert m == {"NCS@5": 0.0, "SR@5": 0.0}
  equal = semantic_metrics(np.zeros((1, 6), np.float32), phi, pos, ks=(2,))
  assert equal["NCS@2"] == pytest.approx(1 / 7)  # items 1, 2: phi 0 + 1


def test_class_map_nan_last_relevant_after_irrelevant():
  q, g = np.array([0]), np.array([0, 1, 0, 1, 0])  # relevant: 0, 2, 4
  one_nan = np.array([[NAN, 0.9, 0.3, 0.5, 0.1]], np.float32)  # 1, 3, 2, 4, 0
  assert class_map(one_nan, q, g) == pytest.approx((1 / 3 + 2 / 4 + 3 / 5) / 3)
  ties = np.array([[NAN, NAN, 0.3, NAN, 0.1]], np.float32)  # 2, 4, then 1, 3, 0
  assert class_map(ties, q, g) == pytest.approx((1 + 1 + 3 / 5) / 3)
  assert class_map(ties, q, g, k=4) == pytest.approx(1.0)  # 2, 4, 1, 3: two hits
  nan = class_map(np.full((1, 5), NAN, np.float32), q, g)
  equal = class_map(np.zeros((1, 5), np.float32), q, g)
  assert nan == pytest.approx((1 / 3 + 2 / 4 + 3 / 5) / 3)
  assert equal == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)
  assert nan <= equal


def _suite(sim, **options):
  owner = np.repeat(np.arange(3), 2)
  rel = (owner[None] == np.arange(3)[:, None]).astype(np.float32)
  rel[0, 2] = 0.5
  return evaluate_retrieval(
    sim,
    caption_to_image=owner,
    relevance=rel,
    labels=ClassLabels(np.array([0, 1, 0])),
    options=EvalOptions(ndcg_ks=(1, 2), semantic_ks=(), curve_ks=(1, 2), **options),
  )


def test_evaluate_retrieval_counts_nonfinite_and_nan_never_wins():
  rng = np.random.default_rng(0)
  sim = rng.normal(size=(3, 6)).astype(np.float32)
  assert _suite(sim)["nonfinite_scores"] == 0.0
  bad = sim.copy()
  bad[0, 1], bad[2, 3] = NAN, -INF
  assert _suite(bad)["nonfinite_scores"] == 2.0
  assert _suite(bad, directions=("t2i",))["nonfinite_scores"] == 2.0
  # Every annotated pair NaN: nothing is retrieved (the old bug: RSUM 600).
  owner = np.repeat(np.arange(3), 2)
  pos_nan = sim.copy()
  pos_nan[owner, np.arange(6)] = NAN
  m = _suite(pos_nan, percent=False, recall_ks=(1, 2))
  assert m["full/rsum"] == 0.0 and m["full/i2t/medr"] == 7.0 and m["full/t2i/medr"] == 4.0
  nan = _suite(np.full((3, 6), NAN, np.float32))
  equal = _suite(np.zeros((3, 6), np.float32))
  assert nan["nonfinite_scores"] == 18.0
  for key, v in equal.items():
    if key.endswith(("medr", "meanr")):
      assert nan[key] >= v, key
    elif key != "nonfinite_scores":
      assert nan[key] <= v + 1e-9, key


_score = st.one_of(
  st.sampled_from([NAN, INF, -INF, 1e30, -1e30, 0.0, -0.0, 1.0]),
  st.floats(-2, 2, width=32),
)


@settings(max_examples=25, deadline=None)
@given(
  st.integers(1, 4).flatmap(
    lambda q: st.tuples(
      st.lists(st.lists(_score, min_size=5, max_size=5), min_size=q, max_size=q),
      st.lists(st.lists(st.integers(0, 4), max_size=3), min_size=q, max_size=q),
    )
  )
)
def test_ranks_match_numpy_reference_with_nan_inf_and_ties(case):
  rows, lists = case
  scores = np.array(rows, np.float32)
  pos = positives_from_lists([sorted(set(x)) for x in lists], num_gallery=5)
  ranks, _ = best_positive_ranks(scores, pos)
  np.testing.assert_array_equal(ranks, best_positive_ranks_reference(scores, pos))


def test_a_subnormal_score_ranks_as_zero():
  """XLA flushes float32 subnormals to zero: 3.3e-43 ties with 0.0 and loses nothing to it
  (a case the property above once drew)."""
  scores = np.array(
    [[0.0, NAN, NAN, NAN, 3.29305139116332e-43], [1e-38, 2e-38, 0, 0, 0]], np.float32
  )
  pos = positives_from_lists([[0], [0]], num_gallery=5)
  ranks, _ = best_positive_ranks(scores, pos)
  np.testing.assert_array_equal(ranks, [0, 1])
  np.testing.assert_array_equal(best_positive_ranks_reference(scores, pos), [0, 1])


@settings(max_examples=25, deadline=None)
@given(st.lists(_score, min_size=6, max_size=6), st.permutations(range(3)))
def test_suite_finite_and_query_permutation_invariant(flat, perm):
  sim = np.array(flat, np.float32).reshape(3, 2)
  sim = np.concatenate([sim, sim[::-1]], axis=1)  # (3, 4)
  owner = np.array([0, 1, 2, 0])
  options = EvalOptions(curve_ks=(1, 2), ndcg_ks=())
  base = evaluate_retrieval(sim, caption_to_image=owner, options=options)
  assert all(math.isfinite(v) for v in base.values())
  # Permuting the images (i2t queries, t2i gallery with relabelled owners)
  # changes no i2t metric when the scores have no ties.
  if len(set(sim.ravel().tolist())) == sim.size and not np.isnan(sim).any():
    perm = np.asarray(perm)
    inv = np.argsort(perm)
    moved = evaluate_retrieval(sim[perm], caption_to_image=inv[owner], options=options)
    for key, v in base.items():
      if "/i2t/" in key:
        assert moved[key] == pytest.approx(v), key
