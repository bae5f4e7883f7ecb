"""LSA (TF-IDF + truncated SVD): preprocessing and parity with the sklearn pipeline run directly."""

from __future__ import annotations

import numpy as np
import pytest

from jitr.relevance.captions_io import read_precomp_captions
from jitr.relevance.lsa import LsaEstimator, preprocess
from jitr.relevance.stopwords import ENGLISH_STOP_WORDS


def test_preprocess():
  assert preprocess("The dogs are running, quickly!") == "dog run quickli"
  assert preprocess("A man's T-shirt; 2 children") == "man shirt children"
  assert preprocess("it is") == ""
  assert len(ENGLISH_STOP_WORDS) == 179 and {"the", "a", "is", "don't", "t"} <= ENGLISH_STOP_WORDS


def test_matches_sklearn_pipeline(small_caps_file):
  from nltk.stem.porter import PorterStemmer
  from sklearn.decomposition import TruncatedSVD
  from sklearn.feature_extraction.text import TfidfVectorizer
  from sklearn.pipeline import make_pipeline

  cs = read_precomp_captions(str(small_caps_file))
  est = LsaEstimator(k=8, n_iter=100, seed=3).fit(cs)

  stem = PorterStemmer().stem
  docs = []
  for c in cs.captions:
    words = "".join(ch if "a" <= ch <= "z" else " " for ch in c.lower()).split()
    docs.append(" ".join(stem(w) for w in words if w not in ENGLISH_STOP_WORDS))
  pipe = make_pipeline(
    TfidfVectorizer(smooth_idf=True),
    TruncatedSVD(n_components=8, algorithm="randomized", n_iter=100, random_state=3),
  )
  reduced = pipe.fit_transform(docs)
  unit = reduced / np.linalg.norm(reduced, axis=1, keepdims=True)
  np.testing.assert_allclose(
    est.caption_vectors(np.arange(cs.num_captions)), unit, rtol=1e-5, atol=1e-6
  )

  # relevance of every image x caption: (1 + max_k cos) / 2, in [0, 1], own captions 1
  cos = unit @ unit.T
  expected = (1 + cos.reshape(5, 5, -1).max(axis=1)) / 2
  scores = est.image_scores(np.arange(5))
  np.testing.assert_allclose(scores, np.clip(expected, 0, 1), rtol=1e-5, atol=1e-6)
  assert scores.min() >= 0 and scores.max() <= 1
  np.testing.assert_allclose(scores[np.repeat(np.arange(5), 5), np.arange(25)], 1.0, atol=1e-6)


def test_k_too_large_is_refused(small_caps_file):
  cs = read_precomp_captions(str(small_caps_file))
  with pytest.raises(ValueError, match="k=400 SVD components need a vocabulary larger than k"):
    LsaEstimator().fit(cs)
