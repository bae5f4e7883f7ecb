"""NDCG@K against an independent numpy implementation and ``rax.ndcg_metric``."""

import numpy as np
import pytest

from jitr.evaluation import EvalOptions, evaluate_retrieval, ndcg_at_k
from tests.jax_compat import install_jax_util_wraps

install_jax_util_wraps()  # rax 0.4.0 calls jax.util.wraps (removed in JAX 0.10)
rax = pytest.importorskip("rax")


def _ndcg_numpy(scores, rel, k):
  """Per-query NDCG@k: full stable argsort, gain 2^r - 1, 1/log2(1 + rank)."""
  out = []
  for s, r in zip(scores, rel):
    k_ = min(k, len(s))
    order = np.argsort(-s, kind="stable")[:k_]
    disc = 1.0 / np.log2(np.arange(2, k_ + 2))
    dcg = np.sum((2.0 ** r[order] - 1.0) * disc)
    idcg = np.sum((2.0 ** np.sort(r)[::-1][:k_] - 1.0) * disc)
    out.append(np.nan if idcg == 0 else dcg / idcg)
  out = np.array(out)
  return float(np.nanmean(out))


def test_matches_numpy_reference_both_directions():
  rng = np.random.default_rng(0)
  n_img, n_cap = 23, 61
  sim = rng.standard_normal((n_img, n_cap)).astype(np.float32)
  rel = rng.integers(0, 4, (n_img, n_cap)).astype(np.float32) / 3.0  # graded, ties
  rel[2] = 0.0  # an image with nothing relevant: excluded from the mean
  rel[:, 5] = 0.0
  owner = np.arange(n_cap) % n_img
  ks = (1, 3, 10, 40, 100)
  m = evaluate_retrieval(
    sim,
    caption_to_image=owner,
    relevance=rel,
    options=EvalOptions(ndcg_ks=ks, semantic_ks=(), percent=False, chunk_size=5),
  )
  for k in ks:
    assert m[f"ndcg/i2t/NDCG@{k}"] == pytest.approx(_ndcg_numpy(sim, rel, k), abs=1e-6)
    assert m[f"ndcg/t2i/NDCG@{k}"] == pytest.approx(_ndcg_numpy(sim.T, rel.T, k), abs=1e-6)
  single = ndcg_at_k(sim, rel, ks=(10,))
  assert single["NDCG@10"] == pytest.approx(m["ndcg/i2t/NDCG@10"], abs=1e-7)


def test_perfect_ranking_gives_one_and_reversed_is_lower():
  rng = np.random.default_rng(1)
  rel = rng.random((4, 30)).astype(np.float32)
  assert ndcg_at_k(rel, rel, ks=(5,))["NDCG@5"] == pytest.approx(1.0)
  assert ndcg_at_k(-rel, rel, ks=(5,))["NDCG@5"] < 0.5


@pytest.mark.parametrize("k", [1, 5, 20])
def test_matches_rax_on_single_lists(k):
  rng = np.random.default_rng(k)
  for _ in range(3):
    scores = rng.standard_normal(50).astype(np.float32)
    labels = rng.integers(0, 5, 50).astype(np.float32) / 4.0
    want = float(rax.ndcg_metric(scores, labels, topn=k))
    got = ndcg_at_k(scores[None], labels[None], ks=(k,))[f"NDCG@{k}"]
    assert got == pytest.approx(want, abs=1e-6)
