"""Token coverage: how much of a caption an image's reference captions state.

Captions are partial descriptions: "a blue pyramid" is true of an image whose
references say "a large blue pyramid left of a red disc", yet its sentence
cosine to them (RSC) is low. Coverage scores the *caption's* tokens instead, as
BERTScore's precision does: each token of the candidate is matched to its
closest token anywhere in the image's references, and the matches are averaged
with idf weights. Through a codebook ``c_1..c_C`` of contextual token vectors
(:func:`jitr.relevance.spherical_kmeans.spherical_kmeans` of the dataset's
tokens), every caption gets one stored vector ``[m ; h]`` of ``2C`` numbers:

* ``m[c] = max_t cos(c_c, y_t)`` over the caption's tokens ``y_t`` (how well the
  caption covers codebook entry ``c``);
* ``h[c] = Σ_{t: nearest(y_t) = c} idf_t / Σ_t idf_t`` (the caption's idf-weighted
  share of tokens nearest to entry ``c``; ``idf = log((N + 1) / (df + 1))`` over the
  dataset's N captions, per word piece; unseen word pieces ``log(N + 1)``).

and ``r(V_i, T_j) = clip(Σ_c h_j[c] · max_k m(T_i^k)[c], 0, 1)``
(:func:`jitr.losses.relevance_from_token_coverage`), positives 1 in training.
Tokens are the word pieces of a Sentence-Transformers model (default
all-MiniLM-L6-v2, offline), contextual, unit-norm, special tokens dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.cosine import unit_rows
from jitr.relevance.estimator import RelevanceEstimator
from jitr.relevance.sentence import DEFAULT_MODEL, distinct_texts, load_sentence_model
from jitr.relevance.spherical_kmeans import spherical_kmeans


def idf_weights(token_ids: Sequence[np.ndarray]) -> dict[int, float]:
  """``{word piece: log((N + 1) / (df + 1))}`` over N documents (``df``: how many hold it).

  >>> {k: round(v, 4) for k, v in idf_weights([np.array([1, 2, 2]), np.array([1])]).items()}
  {1: 0.0, 2: 0.4055}
  """
  df: dict[int, int] = {}
  for ids in token_ids:
    for t in set(np.asarray(ids).tolist()):
      df[t] = df.get(t, 0) + 1
  n = len(token_ids)
  return {t: float(np.log((n + 1) / (d + 1))) for t, d in sorted(df.items())}


def coverage_profiles(
  token_vectors: Sequence[np.ndarray], token_weights: Sequence[np.ndarray], centroids: np.ndarray
) -> np.ndarray:
  """``[n, 2C]`` vectors ``[m ; h]`` of n texts (module docstring) from each text's unit
  token vectors ``[L, D]`` and their idf weights ``[L]``; a text without tokens (or with
  zero total weight) gets ``m = 0`` (``h = 0``).

  >>> cents = np.array([[1.0, 0.0], [0.0, 1.0]])
  >>> out = coverage_profiles([np.array([[1.0, 0.0], [0.6, 0.8]])], [np.array([1.0, 3.0])], cents)
  >>> out.astype(float).round(2).tolist()  # m = [1, 0.8]; the second token is nearest entry 1
  [[1.0, 0.8, 0.25, 0.75]]
  """
  c = len(centroids)
  out = np.zeros((len(token_vectors), 2 * c), np.float32)
  for i, (vecs, weights) in enumerate(zip(token_vectors, token_weights)):
    if len(vecs) == 0:
      continue
    cos = np.asarray(vecs, np.float32) @ centroids.T  # [L, C]
    out[i, :c] = cos.max(axis=0)
    total = float(np.sum(weights))
    if total > 0:
      out[i, c:] = np.bincount(cos.argmax(axis=1), weights=weights, minlength=c) / total
  return out


def coverage_scores(reference_profiles: np.ndarray, candidate_profiles: np.ndarray) -> np.ndarray:
  """``clip(Σ_c h_j[c] · max_k m_k[c], 0, 1)`` of every candidate ``j`` against one set of
  references (``[K, 2C]`` and ``[n, 2C]``): numpy's twin of
  :func:`jitr.losses.relevance_from_token_coverage` for one image.

  >>> refs = np.array([[0.9, 0.1, 1.0, 0.0], [0.2, 0.8, 0.0, 1.0]])
  >>> coverage_scores(refs, np.array([[1.0, 0.3, 0.5, 0.5]])).round(4).tolist()
  [0.85]
  """
  c = reference_profiles.shape[1] // 2
  cover = np.max(reference_profiles[:, :c], axis=0)
  return np.clip(candidate_profiles[:, c:] @ cover, 0.0, 1.0)


@dataclasses.dataclass(frozen=True)
class TokenCoverageSettings:
  """The settings of a :class:`TokenCoverageEstimator`: the fields of
  ``config.estimators.tokens`` (one default each, here).

  Raises:
    ValueError: ``chunk_texts`` below 1, or ``codebook_size`` not in ``[1, max_fit_tokens]``.
  """

  model: str = DEFAULT_MODEL
  """A Sentence-Transformers model name or local path (its word-piece vectors)."""
  codebook_size: int = 256
  """C, the codebook's entries (each caption stores ``2C`` numbers)."""
  seed: int = 0
  """The codebook's initial draw and the token sample."""
  iterations: int = 25
  """Spherical k-means iterations at most."""
  max_fit_tokens: int = 200_000
  """Tokens sampled to fit the codebook (all of them when fewer)."""
  batch_size: int = 128
  """Captions per forward pass of the model."""
  chunk_texts: int = 4096
  """Distinct captions encoded per call when the fit streams over them (their token vectors
  are held together; the values do not depend on it)."""
  device: str = "cpu"
  """Torch device."""
  show_progress: bool = False
  """Show the model's own progress bars (loading, each encoding call)."""

  def __post_init__(self) -> None:
    if self.chunk_texts < 1:
      raise ValueError(f"chunk_texts={self.chunk_texts}: expected >= 1")
    if self.codebook_size < 1 or self.max_fit_tokens < self.codebook_size:
      raise ValueError(
        f"codebook_size={self.codebook_size}, max_fit_tokens={self.max_fit_tokens}: expected "
        "1 <= codebook_size <= max_fit_tokens"
      )


class TokenCoverageEstimator(RelevanceEstimator):
  """Token-coverage relevance (see the module docstring), with ``settings``
  (:class:`TokenCoverageSettings`; the registry builds them from
  ``config.estimators.tokens``)."""

  name = "tokens"
  relevance_kind = "coverage"
  relevance_scale = 1.0
  settings_type = TokenCoverageSettings

  def __init__(self, settings: TokenCoverageSettings = TokenCoverageSettings()) -> None:
    super().__init__()
    self.model_name = settings.model
    self.codebook_size = int(settings.codebook_size)
    self.seed = int(settings.seed)
    self.iterations = int(settings.iterations)
    self.max_fit_tokens = int(settings.max_fit_tokens)
    self.batch_size = settings.batch_size
    self.chunk_texts = int(settings.chunk_texts)
    self.device = settings.device
    self.show_progress = settings.show_progress
    self._model = None
    self._idf: dict[int, float] = {}
    self._unseen_idf = 0.0
    self._centroids: np.ndarray | None = None
    self._vectors: np.ndarray | None = None

  @property
  def model(self) -> str:
    return self.model_name

  def params(self) -> dict[str, Any]:
    return {
      "model": self.model_name,
      "codebook_size": self.codebook_size,
      "seed": self.seed,
      "iterations": self.iterations,
      "max_fit_tokens": self.max_fit_tokens,
      "aggregate": "max",  # the image side: max over its references' m
      "idf": "log((N+1)/(df+1))",
    }

  def _get_model(self):
    if self._model is None:
      self._model = load_sentence_model(
        self.model_name, self.device, show_progress=self.show_progress
      )
    return self._model

  def _word_pieces(self, unique: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each text's word-piece ids as the model sees them ``[L]`` (special tokens included,
    truncated at the model's length) and which of them are not special ``[L]`` (the
    tokenizer alone: no model pass)."""
    model = self._get_model()
    special = set(model.tokenizer.all_special_ids)
    all_ids = model.tokenizer(list(unique), truncation=True, max_length=model.max_seq_length)
    return [
      (np.asarray(ids, np.int64), np.array([t not in special for t in ids], bool))
      for ids in all_ids["input_ids"]
    ]

  def _token_ids(self, unique: Sequence[str]) -> list[np.ndarray]:
    """Each text's word-piece ids, special tokens dropped (the tokenizer alone: no model pass)."""
    return [ids[keep] for ids, keep in self._word_pieces(unique)]

  def _encode(self, unique: Sequence[str]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Word-piece ids ``[L]`` and unit contextual vectors ``[L, D]`` of distinct texts,
    special tokens dropped."""
    model = self._get_model()
    unique = [str(t) for t in unique]
    encoded = model.encode(
      unique,
      batch_size=self.batch_size,
      show_progress_bar=self.show_progress,
      output_value="token_embeddings",
      convert_to_numpy=False,
    )
    ids_u, vecs_u = [], []
    for text, (ids, keep), emb in zip(unique, self._word_pieces(unique), encoded):
      vecs = np.asarray(emb.detach().cpu().numpy() if hasattr(emb, "detach") else emb, np.float32)
      if len(ids) != len(vecs):
        raise RuntimeError(
          f"tokens: {len(ids)} word pieces but {len(vecs)} vectors for {text!r} ({self.model_name})"
        )
      ids_u.append(ids[keep])
      vecs_u.append(unit_rows(vecs[keep]) if keep.any() else vecs[:0])
    return ids_u, vecs_u

  def _encode_in_chunks(
    self, unique: Sequence[str], which: np.ndarray
  ) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
    """``(indices, vectors)`` of ``unique[which]``, ``chunk_texts`` texts per model pass."""
    for lo in range(0, len(which), self.chunk_texts):
      chunk = which[lo : lo + self.chunk_texts]
      _, vecs = self._encode([unique[u] for u in chunk])
      yield chunk, vecs

  def tokens(self, texts: Sequence[str]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each text's word-piece ids ``[L]`` and unit contextual vectors ``[L, D]``, special
    tokens dropped; each distinct text is encoded once."""
    unique, inverse = distinct_texts(texts)
    ids_u, vecs_u = self._encode(unique)
    return [ids_u[i] for i in inverse], [vecs_u[i] for i in inverse]

  def _weights(self, ids: np.ndarray) -> np.ndarray:
    return np.array([self._idf.get(t, self._unseen_idf) for t in ids.tolist()], np.float32)

  def fit(self, captions: CaptionSet) -> TokenCoverageEstimator:
    """idf over the captions, the codebook from ``max_fit_tokens`` sampled tokens, then every
    distinct caption's ``[m ; h]``. Memory holds at most the ``max_fit_tokens`` sampled token
    vectors and one chunk's (``chunk_texts`` captions): when the captions have more tokens
    than the sample, the model runs twice (over the captions holding a sampled token, then
    over all of them for the profiles)."""
    self._captions = captions
    unique, inverse = distinct_texts(captions.captions)
    ids_u = self._token_ids(unique)
    self._idf = idf_weights([ids_u[u] for u in inverse])
    self._unseen_idf = float(np.log(len(inverse) + 1))
    lengths = np.array([len(ids_u[u]) for u in inverse], np.int64)
    total = int(lengths.sum())
    if total <= self.max_fit_tokens:  # every token is in the sample: one model pass
      _, vecs_u = self._encode(unique)
      sample = np.concatenate([vecs_u[u] for u in inverse if len(vecs_u[u])])
      self._centroids = spherical_kmeans(
        sample, self.codebook_size, seed=self.seed, iterations=self.iterations
      )
      profiles = coverage_profiles(vecs_u, [self._weights(i) for i in ids_u], self._centroids)
    else:
      rng = np.random.default_rng(self.seed)
      positions = np.sort(rng.choice(total, size=self.max_fit_tokens, replace=False))
      sample = self._sampled_token_vectors(unique, inverse, lengths, positions)
      self._centroids = spherical_kmeans(
        sample, self.codebook_size, seed=self.seed, iterations=self.iterations
      )
      profiles = np.zeros((len(unique), 2 * self.codebook_size), np.float32)
      every = np.arange(len(unique))
      for chunk, vecs in self._encode_in_chunks(unique, every):
        weights = [self._weights(ids_u[u]) for u in chunk]
        profiles[chunk] = coverage_profiles(vecs, weights, self._centroids)
    self._vectors = profiles[inverse]
    return self

  def _sampled_token_vectors(
    self, unique: Sequence[str], inverse: np.ndarray, lengths: np.ndarray, positions: np.ndarray
  ) -> np.ndarray:
    """``[S, D]`` vectors of the tokens at sorted ``positions`` of the captions' tokens laid
    end to end in caption order (``lengths``: tokens per caption), encoding only the distinct
    captions that hold one."""
    starts = np.concatenate([[0], np.cumsum(lengths)])
    caption = np.searchsorted(starts, positions, side="right") - 1
    offset = positions - starts[caption]
    owner = inverse[caption]  # the distinct text of each sampled token
    by_owner = np.argsort(owner, kind="stable")
    sorted_owner = owner[by_owner]
    needed = np.unique(owner)
    sample = None
    for chunk, vecs in self._encode_in_chunks(unique, needed):
      for u, v in zip(chunk, vecs):
        lo, hi = np.searchsorted(sorted_owner, [u, u + 1])
        rows = by_owner[lo:hi]
        if sample is None:
          sample = np.zeros((len(positions), v.shape[1]), np.float32)
        sample[rows] = v[offset[rows]]
    return sample

  def _fitted(self) -> tuple[np.ndarray, np.ndarray]:
    if self._vectors is None or self._centroids is None:
      raise RuntimeError("TokenCoverageEstimator is not fitted: call fit(captions) first")
    return self._vectors, self._centroids

  def profiles(self, texts: Sequence[str]) -> np.ndarray:
    """``[n, 2C]`` vectors of free texts, with the fitted codebook and idf."""
    _, centroids = self._fitted()
    ids, vecs = self.tokens(texts)
    return coverage_profiles(vecs, [self._weights(i) for i in ids], centroids)

  def caption_vectors(self, caption_indices: np.ndarray) -> np.ndarray:
    """``[n, 2C]`` stored vectors ``[m ; h]`` of the given captions (not unit-norm)."""
    vectors, _ = self._fitted()
    return vectors[np.asarray(caption_indices, dtype=np.int64)]

  def image_score_blocks(
    self, images: np.ndarray, images_per_block: int = 64
  ) -> Iterator[tuple[int, int, np.ndarray]]:
    vectors, centroids = self._fitted()
    c = len(centroids)
    offsets = self.captions.image_offsets
    images = np.asarray(images, dtype=np.int64)
    for lo in range(0, len(images), images_per_block):
      block = images[lo : lo + images_per_block]
      cover = np.stack([vectors[offsets[i] : offsets[i + 1], :c].max(axis=0) for i in block])
      yield lo, lo + len(block), np.clip(cover @ vectors[:, c:].T, 0.0, 1.0).astype(np.float64)

  def pair_scores(
    self, candidates: Sequence[str], reference_sets: Sequence[Sequence[str]]
  ) -> np.ndarray:
    """Coverage of ``candidates[p]`` by the references ``reference_sets[p]`` per pair."""
    if len(candidates) != len(reference_sets):
      raise ValueError(
        f"pair_scores: {len(candidates)} candidates for {len(reference_sets)} reference sets"
      )
    if any(len(r) == 0 for r in reference_sets):
      raise ValueError("pair_scores: an empty reference set (expected >= 1 reference)")
    texts = sorted(set(candidates) | {r for refs in reference_sets for r in refs})
    where = {t: i for i, t in enumerate(texts)}
    prof = self.profiles(texts)
    return np.array(
      [
        coverage_scores(prof[[where[r] for r in refs]], prof[[where[cand]]])[0]
        for cand, refs in zip(candidates, reference_sets)
      ],
      np.float64,
    )
