"""CIDEr-D, vectorized with sparse matrices (equal to pycocoevalcap's ``Cider``).

For a candidate ``c`` and the references ``G`` of an image (all PTB-tokenized,
see :mod:`jitr.relevance.tokenize`), with n-gram orders ``n = 1..4``::

    w_g(s)   = tf_g(s) * (log N - log max(1, df_g))       tf-idf of n-gram g in sentence s
    cos_n    = sum_{g of order n} min(w_g(c), w_g(r)) * w_g(r) / (|w_n(c)| |w_n(r)|)   (clipped)
    pen(c,r) = exp(-(l_c - l_r)^2 / (2 sigma^2)),           sigma = 6
    CIDEr-D  = 10 / |G| * sum_{r in G} pen(c,r) * mean_n cos_n(c, r)

``N`` is the number of reference *sets* of the corpus the scorer was fitted on
and ``df_g`` the number of those sets in which ``g`` occurs (pycocoevalcap: the
``gts`` dict of one ``compute_score`` call). A zero norm gives ``cos_n = 0``.
Like pycocoevalcap, the length ``l`` of a sentence is its number of *bigrams*
(``max(words - 1, 0)``): that is what its ``counts2vec`` counts.

Because ``w_g = tf_g * idf_g``, the clipped product is
``min(tf_c, tf_r) tf_r idf_g^2 = sum_{t >= 1} [tf_c >= t] [tf_r >= t] tf_r idf_g^2``,
so every ``cos`` is a sum over ``t`` of sparse products ``A_t B_t^T`` with
``A_t = [tf >= t] / |w_n(c)|`` and ``B_t = [tf >= t] tf idf^2 / |w_n(r)|``
(all orders side by side in one column space, so one product sums them).
N-grams are extracted with numpy: every word gets a 16-bit id and an n-gram of
up to 4 words is one uint64 key (Python loops take over for ``n > 4`` or more
than 65,535 distinct words). Everything is float64.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
  import scipy.sparse


@dataclasses.dataclass(frozen=True)
class EncodedSentences:
  """Sentences encoded against a fitted :class:`CiderD` vocabulary.

  Attributes:
    counts: ``[n, V]`` CSR term frequencies of the fitted (reference) n-grams.
    inv_norm: ``[n, orders]`` ``1 / |w_order(s)|`` (0 where the norm is 0);
      the norm includes n-grams unseen in the fitted corpus.
    length: ``[n]`` int64 bigram counts (pycocoevalcap's length).
  """

  counts: scipy.sparse.csr_matrix
  inv_norm: np.ndarray
  length: np.ndarray

  def __len__(self) -> int:
    return self.counts.shape[0]

  def rows(self, index: np.ndarray | slice) -> EncodedSentences:
    """The encoding of a subset of the sentences."""
    return EncodedSentences(self.counts[index], self.inv_norm[index], self.length[index])


def ngram_counts(sentence: str, n: int = 4) -> Counter:
  """Counts of the 1..n-grams (tuples of words) of a whitespace-tokenized sentence."""
  words = sentence.split()
  counts: Counter = Counter()
  for k in range(1, n + 1):
    counts.update(tuple(words[i : i + k]) for i in range(len(words) - k + 1))
  return counts


_MAX_WORDS = 1 << 16  # word ids are packed 16 bits each, 4 per uint64 n-gram key
_SEP = "\x00"  # sentence separator while splitting all sentences at once


def packed_ngram_counts(
  sentences: Sequence[str], n: int, word_ids: dict[str, int]
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
  """Distinct 1..n-grams of every sentence with their counts, as packed uint64 keys.

  Word ``w`` gets id ``word_ids[w] >= 1`` (new words are added); the key of the
  n-gram ``w1..wk`` is ``sum_m id(w_m) << 16 (3 - m)``, so keys of different
  orders never collide. Returns ``(sentence, key, tf, lengths)`` sorted by
  (sentence, key), or ``key=None`` when the ids no longer fit in 16 bits.
  """
  if len(sentences) == 0:
    return np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0), np.zeros(0, np.int64)
  if any(_SEP in x for x in sentences):
    raise ValueError("sentences must not contain the NUL character")
  flat = f" {_SEP} ".join(sentences).split()
  new = set(flat)
  new.difference_update(word_ids)
  new.discard(_SEP)
  for w in sorted(new):  # sorted: ids do not depend on set order
    word_ids[w] = len(word_ids) + 1
  if len(word_ids) >= _MAX_WORDS or n > 4:
    return (
      np.zeros(0, np.int64),
      None,
      np.zeros(0),
      np.array([len(x.split()) for x in sentences], np.int64),
    )
  lookup = dict(word_ids)
  lookup[_SEP] = 0
  ids_all = np.fromiter(map(lookup.__getitem__, flat), np.uint64, len(flat))
  is_word = ids_all != 0
  bounds = np.concatenate([[-1], np.flatnonzero(~is_word), [ids_all.size]])
  lens = (np.diff(bounds) - 1).astype(np.int64)
  ids = ids_all[is_word]
  sent_of_tok = np.repeat(np.arange(len(sentences)), lens)
  starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
  pos = np.arange(ids.size) - starts[sent_of_tok]
  room = lens[sent_of_tok] - pos  # tokens from here to the sentence end
  sents, keys = [], []
  for k in range(1, n + 1):
    p = np.flatnonzero(room >= k)
    key = np.zeros(p.size, np.uint64)
    for m in range(k):
      key |= ids[p + m] << np.uint64(16 * (3 - m))
    sents.append(sent_of_tok[p])
    keys.append(key)
  (sent, key), tf = unique_pairs(np.concatenate(sents), np.concatenate(keys), counts=True)
  return sent, key, tf.astype(np.float64), lens


def sorted_unique(x: np.ndarray, return_inverse: bool = False, return_counts: bool = False):
  """``np.unique`` by sorting (numpy's hash-based unique is far slower on large uint64 arrays)."""
  order = np.argsort(x)
  xs = x[order]
  first = np.ones(xs.size, bool)
  first[1:] = xs[1:] != xs[:-1]
  out = [xs[first]]
  if return_inverse:
    inverse = np.empty(x.size, np.int64)
    inverse[order] = np.cumsum(first) - 1
    out.append(inverse)
  if return_counts:
    out.append(np.diff(np.append(np.flatnonzero(first), xs.size)))
  return out[0] if len(out) == 1 else tuple(out)


def unique_pairs(a: np.ndarray, b: np.ndarray, counts: bool = False):
  """Distinct ``(a, b)`` pairs sorted by ``a`` then ``b`` (with their multiplicities when
  ``counts``)."""
  b_values, b_rank = sorted_unique(b, return_inverse=True)
  width = np.int64(max(b_values.size, 1))
  combined = a.astype(np.int64) * width + b_rank  # one int64 sort key
  uniq, mult = sorted_unique(combined, return_counts=True)
  pair = (uniq // width, b_values[uniq % width])
  return (pair, mult) if counts else pair


def packed_order(keys: np.ndarray) -> np.ndarray:
  """0-based n-gram order (words - 1) of packed keys."""
  order = np.zeros(keys.shape, np.int64)
  for m in range(1, 4):
    order += ((keys >> np.uint64(16 * (3 - m))) & np.uint64(0xFFFF)) != 0
  return order


@dataclasses.dataclass(frozen=True)
class PreparedCandidates:
  """Candidates sorted by length with their ``A_t`` factors
  (see :meth:`CiderD.prepare_candidates`)."""

  length: np.ndarray
  inverse: np.ndarray
  run_starts: np.ndarray
  run_ends: np.ndarray
  factors: dict[int, scipy.sparse.csc_matrix]


class CiderD:
  """CIDEr-D scorer: fit the document frequencies on reference sets, score any pairs.

  >>> refs = [["a dog runs", "a dog is running"], ["a cat sleeps", "the cat is asleep"]]
  >>> scorer = CiderD().fit(refs)
  >>> scorer.score_pairs(["a dog runs", "a cat sleeps"], refs).round(4).tolist()
  [4.8697, 4.2533]
  """

  def __init__(self, n: int = 4, sigma: float = 6.0, use_numpy: bool = True):
    self.n = n
    self.sigma = sigma
    self.use_numpy = use_numpy
    self._word_ids: dict[str, int] = {}
    self._keys: np.ndarray | None = None
    self._doc_freq: np.ndarray | None = None

  # ------------------------------------------------------------------ fitting
  def fit(self, reference_sets: Sequence[Sequence[str]]) -> CiderD:
    """Document frequencies over ``reference_sets`` (tokenized strings);
    ``N = len(reference_sets)``."""
    if len(reference_sets) == 0:
      raise ValueError("CiderD.fit: no reference sets (expected at least one list of references)")
    self.ref_len = float(np.log(float(len(reference_sets))))
    # identical reference sets (one image judged many times) are counted once, times their
    # multiplicity
    unique_sets = Counter(tuple(r) for r in reference_sets)
    self._word_ids = {}
    if self._vectorized():
      self._fit_vectorized(
        list(unique_sets), np.fromiter(unique_sets.values(), np.float64, len(unique_sets))
      )
    if not self._vectorized():  # n > 4, or more distinct words than 16-bit ids hold
      self._fit_python(unique_sets)
    self._idf = self.ref_len - np.log(np.maximum(1.0, self._doc_freq))
    return self

  def _vectorized(self) -> bool:
    return self.use_numpy and self.n <= 4 and len(self._word_ids) < _MAX_WORDS

  def _fit_python(self, unique_sets: Counter) -> None:
    df: Counter = Counter()
    for refs, mult in unique_sets.items():
      grams: set = set()
      for ref in refs:
        grams.update(ngram_counts(ref, self.n))
      for g in grams:
        df[g] += mult
    self._keys = None
    self._vocab = {g: i for i, g in enumerate(df)}
    self._doc_freq = np.fromiter(df.values(), dtype=np.float64, count=len(df))
    self._order = np.fromiter((len(g) - 1 for g in df), dtype=np.int64, count=len(df))

  def _fit_vectorized(self, sets: list[tuple[str, ...]], mult: np.ndarray) -> None:
    flat = [r for refs in sets for r in refs]
    set_of_sentence = np.repeat(np.arange(len(sets)), [len(refs) for refs in sets])
    sent, key, _, _ = packed_ngram_counts(flat, self.n, self._word_ids)
    if key is None:
      return
    pair_set, pair_key = unique_pairs(set_of_sentence[sent], key)
    keys, inverse = sorted_unique(pair_key, return_inverse=True)
    self._keys = keys
    self._vocab = {}  # the tuple vocabulary is built only if the Python fallback needs it
    self._doc_freq = np.bincount(inverse, weights=mult[pair_set], minlength=keys.size)
    self._order = packed_order(keys)

  @property
  def vocabulary_size(self) -> int:
    self._check_fitted()
    return len(self._doc_freq)

  def _check_fitted(self) -> None:
    if getattr(self, "_doc_freq", None) is None:
      raise RuntimeError("CiderD is not fitted: call fit(reference_sets) first")

  # ----------------------------------------------------------------- encoding
  def encode(self, sentences: Sequence[str]) -> EncodedSentences:
    """Term frequencies, inverse per-order norms and lengths of tokenized sentences."""
    self._check_fitted()
    if self._keys is not None:
      sent, key, tf, lens = packed_ngram_counts(list(sentences), self.n, self._word_ids)
      if key is not None:
        return self._encode_packed(len(sentences), sent, key, tf, lens)
    return self._encode_python(sentences)

  def _encode_packed(
    self, n_sent: int, sent: np.ndarray, key: np.ndarray, tf: np.ndarray, lens: np.ndarray
  ) -> EncodedSentences:
    n_keys = self._keys.size
    col = np.searchsorted(self._keys, key)
    known = col < n_keys
    known[known] = self._keys[col[known]] == key[known]
    weight = tf * np.where(known, self._idf[np.minimum(col, n_keys - 1)], self.ref_len)
    sq_norm = np.bincount(
      sent * self.n + packed_order(key), weights=weight * weight, minlength=n_sent * self.n
    )
    import scipy.sparse as sp

    # rows are sorted by (sentence, key) and columns follow the key order: CSR in order
    indptr = np.concatenate([[0], np.cumsum(np.bincount(sent[known], minlength=n_sent))])
    counts = sp.csr_matrix((tf[known], col[known], indptr), shape=(n_sent, n_keys))
    norm = np.sqrt(sq_norm.reshape(n_sent, self.n))
    inv_norm = np.divide(1.0, norm, out=np.zeros_like(norm), where=norm != 0)
    return EncodedSentences(counts, inv_norm, np.maximum(lens - 1, 0))

  def _encode_python(self, sentences: Sequence[str]) -> EncodedSentences:
    import scipy.sparse as sp

    vocab, idf, ref_len = self._vocab, self._idf, self.ref_len
    if self._keys is not None:  # fitted by the vectorized path: rebuild the tuple vocabulary
      vocab = self._tuple_vocabulary()
    indptr = [0]
    indices: list[int] = []
    data: list[int] = []
    sq_norm = np.zeros((len(sentences), self.n))
    length = np.zeros(len(sentences), dtype=np.int64)
    for s, sentence in enumerate(sentences):
      counts = ngram_counts(sentence, self.n)
      row_sq = sq_norm[s]
      for g, tf in counts.items():
        col = vocab.get(g)
        weight = tf * (idf[col] if col is not None else ref_len)
        row_sq[len(g) - 1] += weight * weight
        if col is not None:
          indices.append(col)
          data.append(tf)
      indptr.append(len(indices))
      length[s] = max(len(sentence.split()) - 1, 0)
    counts = sp.csr_matrix(
      (np.asarray(data, np.float64), np.asarray(indices, np.int64), np.asarray(indptr, np.int64)),
      shape=(len(sentences), len(idf)),
    )
    counts.sort_indices()
    norm = np.sqrt(sq_norm)
    inv_norm = np.divide(1.0, norm, out=np.zeros_like(norm), where=norm != 0)
    return EncodedSentences(counts, inv_norm, length)

  def _tuple_vocabulary(self) -> dict[tuple[str, ...], int]:
    words = {i: w for w, i in self._word_ids.items()}
    vocab = {}
    for col, key in enumerate(self._keys.tolist()):
      fields = [(key >> (16 * (3 - m))) & 0xFFFF for m in range(4)]
      vocab[tuple(words[f] for f in fields if f)] = col
    return vocab

  # ------------------------------------------------------- the sparse factors
  def _factors(
    self, enc: EncodedSentences, side: str
  ) -> Iterator[tuple[int, scipy.sparse.csr_matrix]]:
    """``(t, A_t)`` for the candidate side or ``(t, B_t)`` for the reference side."""
    import scipy.sparse as sp

    counts = enc.counts
    rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
    scale = enc.inv_norm[rows, self._order[counts.indices]]
    if side == "reference":
      scale = scale * counts.data * self._idf[counts.indices] ** 2
    t_max = int(counts.data.max()) if counts.nnz else 0
    for t in range(1, t_max + 1):
      keep = counts.data >= t
      # copies: eliminate_zeros works in place and must not touch ``enc``
      m = sp.csr_matrix(
        (np.where(keep, scale, 0.0), counts.indices.copy(), counts.indptr.copy()),
        shape=counts.shape,
      )
      m.eliminate_zeros()
      yield t, m

  def _penalty(self, delta: np.ndarray) -> np.ndarray:
    """``exp(-delta^2 / (2 sigma^2))`` (pycocoevalcap's ``np.e ** (...)``)."""
    return np.e ** (-(delta.astype(np.float64) ** 2) / (2 * self.sigma**2))

  # ------------------------------------------------------------------ scoring
  def pair_cosines(self, cands: EncodedSentences, refs: EncodedSentences) -> np.ndarray:
    """``sum_n cos_n(c_p, r_p)`` for row-aligned pairs ``p`` (``len(cands) == len(refs)``)."""
    if len(cands) != len(refs):
      raise ValueError(f"pair_cosines: {len(cands)} candidates for {len(refs)} references")
    total = np.zeros(len(cands))
    b_factors = dict(self._factors(refs, "reference"))
    for t, a in self._factors(cands, "candidate"):
      if t in b_factors:
        total += np.asarray(a.multiply(b_factors[t]).sum(axis=1)).ravel()
    return total

  def score_pairs(
    self, candidates: Sequence[str], reference_sets: Sequence[Sequence[str]]
  ) -> np.ndarray:
    """CIDEr-D of ``candidates[p]`` against ``reference_sets[p]`` (tokenized), float64 ``[P]``.

    With the scorer fitted on ``reference_sets`` this is pycocoevalcap's
    ``Cider().compute_score(gts, res)[1]`` for ``gts = {p: reference_sets[p]}``,
    ``res = {p: [candidates[p]]}``.
    """
    if len(candidates) != len(reference_sets):
      raise ValueError(
        f"score_pairs: {len(candidates)} candidates for {len(reference_sets)} reference sets"
      )
    sizes = np.array([len(r) for r in reference_sets], dtype=np.int64)
    if np.any(sizes == 0):
      raise ValueError(
        f"score_pairs: reference set {int(np.argmin(sizes))} is empty (expected >= 1 reference)"
      )
    flat_refs = [r for refs in reference_sets for r in refs]
    texts = sorted(set(flat_refs) | set(candidates))  # each distinct sentence is encoded once
    where = {t: i for i, t in enumerate(texts)}
    enc = self.encode(texts)
    ref_enc = enc.rows(np.array([where[r] for r in flat_refs], np.int64))
    pair_of_ref = np.repeat(np.arange(len(candidates)), sizes)
    cand_rows = enc.rows(np.array([where[c] for c in candidates], np.int64)[pair_of_ref])
    cos = self.pair_cosines(cand_rows, ref_enc)
    per_ref = cos * self._penalty(cand_rows.length - ref_enc.length)
    sums = np.bincount(pair_of_ref, weights=per_ref, minlength=len(candidates))
    return sums / self.n / sizes * 10.0

  def prepare_candidates(self, cands: EncodedSentences) -> PreparedCandidates:
    """Candidates ready for :meth:`score_block`: sorted by length, factors in CSC form."""
    order = np.argsort(cands.length, kind="stable")
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    sorted_cands = cands.rows(order)
    runs = np.flatnonzero(np.diff(sorted_cands.length)) + 1
    starts = np.concatenate([[0], runs]).astype(np.int64)
    ends = np.concatenate([runs, [len(cands)]]).astype(np.int64)
    factors = {t: a.tocsc() for t, a in self._factors(sorted_cands, "candidate")}
    return PreparedCandidates(sorted_cands.length, inverse, starts, ends, factors)

  def score_block(
    self, cands: PreparedCandidates, refs: EncodedSentences, ref_offsets: np.ndarray
  ) -> np.ndarray:
    """CIDEr-D ``[N_c, N_sets]`` of every candidate against every reference set of a (small) block.

    Reference set ``i`` is rows ``ref_offsets[i]:ref_offsets[i + 1]`` of ``refs``;
    memory is ``~ 8 * N_c * len(refs)`` bytes.
    """
    ref_offsets = np.asarray(ref_offsets, dtype=np.int64)
    sizes = np.diff(ref_offsets)
    if ref_offsets[0] != 0 or ref_offsets[-1] != len(refs) or np.any(sizes <= 0):
      raise ValueError(
        "score_block: ref_offsets must run from 0 to len(refs) with >= 1 reference per set"
      )
    n_c = len(cands.length)
    cos = None
    for t, b in self._factors(refs, "reference"):
      if t not in cands.factors or b.nnz == 0:
        continue
      cols = np.unique(b.indices)
      part = cands.factors[t][:, cols] @ np.ascontiguousarray(b[:, cols].toarray().T)
      cos = part if cos is None else np.add(cos, part, out=cos)
    if cos is None:
      cos = np.zeros((n_c, len(refs)))
    # rows are sorted by length: one broadcast multiply per run of equal lengths
    for start, end in zip(cands.run_starts, cands.run_ends):
      cos[start:end] *= self._penalty(cands.length[start] - refs.length)[None, :]
    sums = np.add.reduceat(cos, ref_offsets[:-1], axis=1)
    sums *= (10.0 / self.n) / sizes[None, :].astype(np.float64)
    return sums[cands.inverse]

  def score_blocks(
    self,
    cands: EncodedSentences,
    refs: EncodedSentences,
    ref_offsets: np.ndarray,
    images_per_block: int = 64,
  ) -> Iterator[tuple[int, int, np.ndarray]]:
    """CIDEr-D of every candidate against every reference set, one block of sets at a time.

    Args:
      cands: encoded candidates ``[N_c]``.
      refs: encoded references, set ``i`` is rows ``ref_offsets[i]:ref_offsets[i + 1]``.
      ref_offsets: ``[N_sets + 1]`` int64.
      images_per_block: sets per block.

    Yields:
      ``(lo, hi, scores)`` with ``scores[c, i - lo]`` = CIDEr-D of candidate ``c`` for set ``i``.
    """
    prepared = self.prepare_candidates(cands)
    ref_offsets = np.asarray(ref_offsets, dtype=np.int64)
    n_sets = len(ref_offsets) - 1
    for lo in range(0, n_sets, images_per_block):
      hi = min(lo + images_per_block, n_sets)
      r0, r1 = int(ref_offsets[lo]), int(ref_offsets[hi])
      yield (
        lo,
        hi,
        self.score_block(prepared, refs.rows(slice(r0, r1)), ref_offsets[lo : hi + 1] - r0),
      )


def cider_d(
  candidates: Sequence[str], reference_sets: Sequence[Sequence[str]], n: int = 4, sigma: float = 6.0
) -> np.ndarray:
  """pycocoevalcap-equivalent CIDEr-D: fit on ``reference_sets``, score ``candidates[p]``
  against ``reference_sets[p]``.

  Inputs are already tokenized (see :func:`jitr.relevance.tokenize.ptb_tokenize`).
  """
  return CiderD(n=n, sigma=sigma).fit(reference_sets).score_pairs(candidates, reference_sets)
