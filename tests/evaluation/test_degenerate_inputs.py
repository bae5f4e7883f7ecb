"""Degenerate inputs of ``evaluate_retrieval``: one ``ValueError`` saying what was expected.

* A similarity matrix without images or captions (0 x 0, 0 x N, N x 0).
* Non-finite graded relevance: refused with its count (before, a NaN dropped its query from
  NDCG while ``nonfinite_scores`` said 0). Non-finite *scores* keep their contract: they rank
  worst and are counted in ``nonfinite_scores``.
"""

import numpy as np
import pytest

from jitr.evaluation import CrossModalScores, EvalOptions, evaluate_retrieval

NAN, INF = float("nan"), float("inf")
OPTIONS = EvalOptions(recall_ks=(1, 2), ndcg_ks=(1, 2), semantic_ks=(), curve_ks=(1, 2))


def _data(num_images: int = 3, per_image: int = 2):
  rng = np.random.default_rng(0)
  sim = rng.normal(size=(num_images, num_images * per_image)).astype(np.float32)
  relevance = rng.uniform(size=sim.shape).astype(np.float32)
  return sim, np.repeat(np.arange(num_images), per_image), relevance


@pytest.mark.parametrize("shape", [(0, 0), (0, 4), (3, 0)])
def test_a_similarity_matrix_without_images_or_captions_is_one_clear_error(shape):
  sim = np.zeros(shape, np.float32)
  owner = np.zeros(shape[1], np.int64)
  with pytest.raises(ValueError) as err:
    evaluate_retrieval(sim, caption_to_image=owner)
  assert str(err.value) == (
    f"`sim` is {shape[0]} x {shape[1]}, expected at least 1 image (row) and 1 caption (column)"
  )


@pytest.mark.parametrize("bad", [NAN, INF, -INF])
def test_nonfinite_relevance_is_refused_with_its_count(bad):
  sim, owner, relevance = _data()
  relevance[0, 3] = bad
  relevance[2, 1] = NAN
  with pytest.raises(ValueError) as err:
    evaluate_retrieval(sim, caption_to_image=owner, relevance=relevance, options=OPTIONS)
  assert str(err.value) == (
    "`relevance` has 2 non-finite entries (NaN or +-inf) of 3 x 6, expected finite graded relevance"
  )


def test_nonfinite_relevance_from_a_source_is_refused_too():
  sim, owner, relevance = _data(num_images=4)
  relevance[1, 5] = NAN
  source = CrossModalScores.from_matrix(relevance)
  with pytest.raises(ValueError, match=r"^`relevance` has 1 non-finite entries"):
    evaluate_retrieval(
      sim,
      caption_to_image=owner,
      relevance=source,
      options=EvalOptions(ndcg_ks=(1,), semantic_ks=(), chunk_size=3),
    )


def test_nonfinite_scores_keep_their_contract_with_finite_relevance():
  sim, owner, relevance = _data()
  clean = evaluate_retrieval(sim, caption_to_image=owner, relevance=relevance, options=OPTIONS)
  sim[0, 0] = NAN  # image 0's first positive
  out = evaluate_retrieval(sim, caption_to_image=owner, relevance=relevance, options=OPTIONS)
  assert clean["nonfinite_scores"] == 0.0 and out["nonfinite_scores"] == 1.0
  assert out["ndcg/i2t/NDCG@2"] <= clean["ndcg/i2t/NDCG@2"]
