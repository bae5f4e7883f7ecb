"""NCS@K and Semantic Recall@K on hand-computed cases."""

import numpy as np
import pytest

from jitr.evaluation import positives_from_lists, semantic_metrics


def test_ncs_and_semantic_recall_hand_computed():
  # One query, 6 gallery items; item 0 is the annotated positive (removed).
  scores = np.array([[0.9, 0.1, 0.8, 0.5, 0.7, 0.2]], np.float32)
  phi = np.array([[5.0, 0.0, 1.0, 3.0, 2.0, 4.0]], np.float32)
  pos = positives_from_lists([[0]], num_gallery=6)
  m = semantic_metrics(scores, phi, pos, ks=(1, 2, 3), num_relevant=1)
  # Ranking without the positive: 2 (phi 1), 4 (2), 3 (3), 5 (4), 1 (0).
  # Ideal without the positive: 5 (4), 3 (3), 4 (2), ...
  assert m["NCS@1"] == pytest.approx(1 / 4)
  assert m["NCS@2"] == pytest.approx((1 + 2) / (4 + 3))
  assert m["NCS@3"] == pytest.approx((1 + 2 + 3) / (4 + 3 + 2))
  # The single most relevant item (5) is retrieved at position 4.
  assert m["SR@1"] == 0.0 and m["SR@3"] == 0.0
  m = semantic_metrics(scores, phi, pos, ks=(3, 4), num_relevant=2)
  # With N = 2, item 3 (position 3) is relevant.
  assert m["SR@3"] == 1.0 and m["SR@4"] == 1.0


def test_ncs_is_a_ratio_of_sums_over_queries():
  scores = np.array([[0.3, 0.2, 0.1], [0.1, 0.2, 0.3]], np.float32)
  phi = np.array([[1.0, 2.0, 6.0], [1.0, 2.0, 6.0]], np.float32)
  none = positives_from_lists([[], []], num_gallery=3)
  m = semantic_metrics(scores, phi, none, ks=(1, 2), num_relevant=1)
  assert m["NCS@1"] == pytest.approx((1 + 6) / (6 + 6))
  assert m["NCS@2"] == pytest.approx((3 + 8) / (8 + 8))
  assert m["SR@1"] == 0.5 and m["SR@2"] == 0.5


def test_positives_need_room():
  pos = positives_from_lists([[0, 1]], num_gallery=3)
  with pytest.raises(ValueError, match="num_relevant"):
    semantic_metrics(np.zeros((1, 3)), np.zeros((1, 3)), pos, ks=(2,))


def _ncs_reference(sim, phi, caption_image, fold, *, kept: bool, k: int) -> float:
  """NCS@k written plainly (numpy sorts, one query at a time): ``Σ retrieved φ / Σ ideal φ``
  over both directions' queries taken together per direction; ``fold`` None: the whole
  gallery, else the mean over folds of each fold's NCS."""
  out = {}
  for d, (scores, sem) in {"i2t": (sim, phi), "t2i": (sim.T, phi.T)}.items():
    own = caption_image[None] == np.arange(sim.shape[0])[:, None]
    own = own if d == "i2t" else own.T
    img_of = np.arange(sim.shape[0]) if d == "i2t" else caption_image
    gal_of = caption_image if d == "i2t" else np.arange(sim.shape[0])
    folds = [None] if fold is None else sorted(set(fold))
    per_fold = []
    for f in folds:
      num = den = 0.0
      for q in range(scores.shape[0]):
        if f is not None and fold[img_of[q]] != f:
          continue
        items = [
          g
          for g in range(scores.shape[1])
          if (kept or not own[q, g]) and (f is None or fold[gal_of[g]] == f)
        ]
        ranked = sorted(items, key=lambda g, q=q: (-scores[q, g], g))[:k]
        ideal = sorted((sem[q, g] for g in items), reverse=True)[:k]
        num += sum(sem[q, g] for g in ranked)
        den += sum(ideal)
      per_fold.append(num / den)
    out[d] = float(np.mean(per_fold))
  return out


@pytest.mark.parametrize("k", [1, 3])
def test_ncs_kept_removed_and_per_fold_match_a_plain_reference(k):
  from jitr.evaluation import evaluate_retrieval
  from jitr.evaluation.options import EvalOptions

  rng = np.random.default_rng(3)
  n_img, per = 12, 2
  caption_image = np.repeat(np.arange(n_img), per)
  sim = rng.normal(size=(n_img, n_img * per)).astype(np.float32)
  phi = rng.uniform(size=sim.shape).astype(np.float32)
  own = caption_image[None] == np.arange(n_img)[:, None]
  phi[own] += 1.0  # the annotated pairs: the highest φ, and the model ranks them well
  sim[own] += 2.0
  fold = np.arange(n_img) // 4  # three folds of 4 images
  options = EvalOptions(semantic_ks=(k,), recall_ks=(1,), percent=False)
  m = evaluate_retrieval(
    sim, caption_to_image=caption_image, fold_ids=fold, semantic=phi, options=options
  )
  for prefix, kept, folds in (
    ("semantic", False, None),
    ("semantic_gt", True, None),
    ("folds_semantic", False, fold),
    ("folds_semantic_gt", True, fold),
  ):
    want = _ncs_reference(sim, phi, caption_image, folds, kept=kept, k=k)
    for d in ("i2t", "t2i"):
      assert m[f"{prefix}/{d}/NCS@{k}"] == pytest.approx(want[d], rel=1e-5), (prefix, d)
  # a model that retrieves the annotated pairs first scores higher with them kept
  assert m[f"semantic_gt/i2t/NCS@{k}"] > m[f"semantic/i2t/NCS@{k}"]
