"""LSEH's semantic similarity: TF-IDF + truncated SVD (latent semantic analysis).

Each caption is preprocessed (:func:`preprocess`: letters only, lower case,
English stop words removed, Porter stemming), weighted with
``TfidfVectorizer(smooth_idf=True)`` fitted on the dataset's captions, and
reduced with ``TruncatedSVD(n_components=k, algorithm="randomized", n_iter=100,
random_state=seed)``. The similarity of two captions is the cosine of their
reduced vectors; as a relevance (the RSC form) ``(1 + max_k cos) / 2``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.cosine import CosineEstimator, unit_rows
from jitr.relevance.stopwords import ENGLISH_STOP_WORDS

_NON_LETTERS = re.compile(r"[^a-z]+")


@functools.lru_cache(maxsize=1)
def _stemmer():
  from nltk.stem.porter import PorterStemmer

  return PorterStemmer()


def preprocess(text: str) -> str:
  """Letters only, lower case, stop words removed, Porter-stemmed; words joined by spaces."""
  stem = _stemmer().stem
  words = _NON_LETTERS.sub(" ", text.lower()).split()
  return " ".join(stem(w) for w in words if w not in ENGLISH_STOP_WORDS)


class LsaEstimator(CosineEstimator):
  """TF-IDF + truncated-SVD cosine relevance (LSEH).

  Args:
    k: number of SVD components (400 in LSEH); must be below the vocabulary size.
    n_iter: randomized-SVD power iterations.
    seed: ``random_state`` of the SVD.
    aggregate: ``max`` (default) or ``mean`` over an image's references.
  """

  name = "lsa"

  def __init__(
    self, k: int = 400, n_iter: int = 100, seed: int = 0, aggregate: str = "max"
  ) -> None:
    super().__init__(aggregate=aggregate)
    self.k = k
    self.n_iter = n_iter
    self.seed = seed
    self._tfidf = None
    self._svd = None

  def params(self) -> dict[str, Any]:
    return {
      "k": self.k,
      "n_iter": self.n_iter,
      "seed": self.seed,
      "algorithm": "randomized",
      "smooth_idf": True,
      "preprocess": "letters, lowercase, nltk-english-stopwords, porter",
      "aggregate": self.aggregate,
    }

  def fit(self, captions: CaptionSet) -> LsaEstimator:
    """Fit TF-IDF and the SVD on every caption of ``captions`` (one document per caption)."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    super().fit(captions)
    docs = [preprocess(c) for c in captions.captions]
    tfidf = TfidfVectorizer(smooth_idf=True)
    x = tfidf.fit_transform(docs)
    if self.k >= x.shape[1]:
      raise ValueError(
        f"lsa: k={self.k} SVD components need a vocabulary larger than k, "
        f"but {captions.source} has {x.shape[1]} distinct stemmed words"
      )
    svd = TruncatedSVD(
      n_components=self.k, algorithm="randomized", n_iter=self.n_iter, random_state=self.seed
    )
    reduced = svd.fit_transform(x)
    self._tfidf, self._svd = tfidf, svd
    self._vectors = unit_rows(reduced)
    return self

  @property
  def dim(self) -> int:
    return self.k

  def embed(self, texts: Sequence[str]) -> np.ndarray:
    """``[n, k]`` unit-norm reduced TF-IDF vectors (zero for texts with no known word)."""
    if self._svd is None:
      raise RuntimeError("LsaEstimator is not fitted: call fit(captions) first")
    x = self._tfidf.transform([preprocess(t) for t in texts])
    return unit_rows(self._svd.transform(x))
