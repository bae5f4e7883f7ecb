"""Word vocabulary and caption tokenisation (numpy only).

Follows VSE++/SCAN: lower-cased word tokens, ids ``<pad>`` = 0, ``<start>`` = 1,
``<end>`` = 2, ``<unk>`` = 3, then the words seen at least ``min_count`` times in
the training captions, most frequent first (ties alphabetical, so the vocabulary
is deterministic). Captions become ``<start> w_1 .. w_n <end>`` padded with 0 to
a common length, plus their lengths.

A vocabulary carries the name of the tokenizer that splits its captions into words
(:data:`!TOKENIZERS`): ``"jitr"``, :func:`tokenize` (runs of letters and digits; the
default), or ``"nltk"``, the official VSE++/VSRN/SGRAF/CVSE tokenizer
``nltk.word_tokenize(caption.lower())`` (:func:`jitr.data.nltk_tokens.nltk_tokens`: ``.``
and ``'s`` are words, hyphenated words stay whole). ``vocab.json`` records it; a file
without the field is ``"jitr"``. The official code never cuts a caption, so neither does
a run with an ``"nltk"`` vocabulary (:func:`caption_limit`).
"""

from __future__ import annotations

import collections
import os
import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from jitr import fileio, paths
from jitr.data.nltk_tokens import nltk_tokens

PAD, START, END, UNK = "<pad>", "<start>", "<end>", "<unk>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, START, END, UNK)
PAD_ID, START_ID, END_ID, UNK_ID = 0, 1, 2, 3
_TOKEN_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def tokenize(text: str) -> list[str]:
  """Lower-cased word tokens: runs of ``[a-z0-9]`` (with an optional ``'s``-like
  suffix); punctuation and hyphens split words."""
  return _TOKEN_RE.findall(text.lower())


JITR, NLTK = "jitr", "nltk"
# tokenizer name -> the words of a caption
TOKENIZERS: dict[str, Callable[[str], list[str]]] = {JITR: tokenize, NLTK: nltk_tokens}


def known_tokenizer(name: object) -> bool:
  """Whether ``name`` names a tokenizer of :data:`!TOKENIZERS`."""
  return isinstance(name, str) and name in TOKENIZERS


def tokenize_all(captions: Iterable[str], tokenizer: str = JITR) -> list[list[str]]:
  """The words of each caption by the tokenizer named ``tokenizer``, in order."""
  words = TOKENIZERS[tokenizer]
  return [words(c) for c in captions]


class Vocab:
  """A word <-> id mapping with the special tokens at ids 0..3, and the name of the
  tokenizer (:data:`!TOKENIZERS`) that splits captions into its words."""

  def __init__(self, words: Sequence[str], tokenizer: str = JITR):
    words = list(words)
    if tuple(words[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
      raise ValueError(
        f"Vocab: the first words must be {SPECIAL_TOKENS}, "
        f"got {tuple(words[: len(SPECIAL_TOKENS)])}"
      )
    if len(set(words)) != len(words):
      dup = [w for w, c in collections.Counter(words).items() if c > 1]
      raise ValueError(f"Vocab: duplicated words {dup[:5]}")
    if not known_tokenizer(tokenizer):
      raise ValueError(
        f"Vocab: tokenizer {tokenizer!r}; expected one of {', '.join(map(repr, TOKENIZERS))}"
      )
    self.words: tuple[str, ...] = tuple(words)
    self.tokenizer: str = tokenizer
    self._ids = {w: i for i, w in enumerate(words)}

  def __len__(self) -> int:
    return len(self.words)

  def __contains__(self, word: str) -> bool:
    return word in self._ids

  def __eq__(self, other: object) -> bool:
    return (
      isinstance(other, Vocab) and self.words == other.words and self.tokenizer == other.tokenizer
    )

  def id(self, word: str) -> int:
    """Id of ``word``, ``UNK_ID`` if unknown."""
    return self._ids.get(word, UNK_ID)

  def tokens(self, text: str) -> list[str]:
    """The words of ``text`` by this vocabulary's tokenizer."""
    return TOKENIZERS[self.tokenizer](text)

  def encode_words(self, words: Sequence[str], *, add_boundaries: bool = True) -> list[int]:
    """Ids of ``words`` (unknown ones ``UNK_ID``), wrapped in ``<start>``/``<end>`` by
    default."""
    ids = [self.id(w) for w in words]
    return [START_ID, *ids, END_ID] if add_boundaries else ids

  def encode(self, text: str, *, add_boundaries: bool = True) -> list[int]:
    """Ids of ``text``'s tokens, wrapped in ``<start>``/``<end>`` by default."""
    return self.encode_words(self.tokens(text), add_boundaries=add_boundaries)

  def decode(self, ids: Iterable[int]) -> str:
    """Words of ``ids`` joined by spaces, special tokens dropped."""
    return " ".join(self.words[i] for i in ids if i >= len(SPECIAL_TOKENS))

  def encode_batch(
    self, texts: Sequence[str], *, max_len: int | None = None, add_boundaries: bool = True
  ) -> tuple[np.ndarray, np.ndarray]:
    """Pads a batch: int32 ids ``[B, L]`` (0 = ``<pad>``) and int32 lengths ``[B]``
    (:meth:`encode_tokenized` of the texts' tokens)."""
    return self.encode_tokenized(
      [self.tokens(t) for t in texts], max_len=max_len, add_boundaries=add_boundaries
    )

  def encode_tokenized(
    self,
    captions: Sequence[Sequence[str]],
    *,
    max_len: int | None = None,
    add_boundaries: bool = True,
  ) -> tuple[np.ndarray, np.ndarray]:
    """Pads a batch of captions given as words (:meth:`tokens`): int32 ids ``[B, L]``
    (0 = ``<pad>``) and int32 lengths ``[B]``.

    ``L = max_len`` if given (longer captions are cut to ``max_len`` tokens,
    keeping ``<end>`` last), else the longest caption. Every length is >= 1.
    """
    seqs = [self.encode_words(words, add_boundaries=add_boundaries) for words in captions]
    if max_len is not None:
      if max_len < (2 if add_boundaries else 1):
        raise ValueError(f"encode_batch: max_len={max_len} too small")
      seqs = [
        s if len(s) <= max_len else (s[: max_len - 1] + [END_ID] if add_boundaries else s[:max_len])
        for s in seqs
      ]
    seqs = [s if s else [UNK_ID] for s in seqs]
    return pad_sequences(seqs, PAD_ID, max_len)

  def save(self, path: str | os.PathLike) -> None:
    """Writes ``{"tokenizer": NAME, "words": [...]}`` as JSON atomically (temp file +
    rename)."""
    fileio.write_json_atomic(
      path,
      {"tokenizer": self.tokenizer, "words": list(self.words)},
      indent=None,
      sort_keys=False,
      ensure_ascii=False,
    )

  @classmethod
  def load(cls, path: str | os.PathLike) -> Vocab:
    """Reads a file written by :meth:`save` (one without ``tokenizer`` is ``"jitr"``: a
    file written before the field); clear errors for a missing file, bad JSON or a
    missing/invalid ``words`` or ``tokenizer`` field."""
    path = os.fspath(path)
    if not paths.isfile(path):
      raise FileNotFoundError(f"Vocab.load: no vocabulary file at {path!r}")
    data = fileio.read_json(path)
    words = data.get("words") if isinstance(data, dict) else None
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
      raise ValueError(f'Vocab.load: {path!r} must hold {{"words": [str, ...]}}')
    tokenizer = data.get("tokenizer", JITR)
    if not known_tokenizer(tokenizer):
      raise ValueError(
        f"Vocab.load: {path!r}: tokenizer is {tokenizer!r}; expected one of "
        f"{', '.join(map(repr, TOKENIZERS))}"
      )
    try:
      return cls(words, tokenizer)
    except ValueError as e:
      raise ValueError(f"Vocab.load: {path!r}: {e}") from None


def vocab_difference(theirs: Vocab, ours: Vocab) -> str | None:
  """``None`` when the two vocabularies are equal, else where they first differ:
  ``(N words, this run has M; word i is 'x' there, 'y' here)``, or, for the same words,
  ``(the same N words, tokenised by 'nltk' there, 'jitr' here)``."""
  if theirs == ours:
    return None
  if theirs.words == ours.words:
    return (
      f"(the same {len(ours)} words, tokenised by {theirs.tokenizer!r} there, "
      f"{ours.tokenizer!r} here)"
    )
  first = next(
    (i for i, (a, b) in enumerate(zip(theirs.words, ours.words, strict=False)) if a != b),
    min(len(theirs), len(ours)),
  )
  word = lambda v: repr(v.words[first]) if first < len(v) else "(none)"  # noqa: E731
  return (
    f"({len(theirs)} words, this run has {len(ours)}; word {first} is {word(theirs)} there, "
    f"{word(ours)} here)"
  )


def vocab_from_tokens(
  captions: Iterable[Sequence[str]], *, min_count: int = 1, tokenizer: str = JITR
) -> Vocab:
  """Vocabulary of the words occurring at least ``min_count`` times in ``captions`` (each
  its words by the tokenizer named ``tokenizer``), most frequent first, ties alphabetical."""
  counts = collections.Counter(w for words in captions for w in words)
  words = sorted((w for w, n in counts.items() if n >= min_count), key=lambda w: (-counts[w], w))
  return Vocab(SPECIAL_TOKENS + tuple(w for w in words if w not in SPECIAL_TOKENS), tokenizer)


def build_vocab(captions: Iterable[str], *, min_count: int = 1, tokenizer: str = JITR) -> Vocab:
  """Vocabulary of the words occurring at least ``min_count`` times in ``captions`` (VSE++
  uses 4 on COCO) by the tokenizer named ``tokenizer``, most frequent first, ties
  alphabetical."""
  return vocab_from_tokens(
    tokenize_all(captions, tokenizer), min_count=min_count, tokenizer=tokenizer
  )


def caption_limit(vocab: object, max_len: int) -> int | None:
  """The length a run cuts the captions of ``vocab`` to: ``max_len``
  (``config.max_caption_len``), or ``None`` (uncut, as wide as the longest caption) for a
  word vocabulary of the ``"nltk"`` tokenizer, whose official code never cuts a caption."""
  if isinstance(vocab, Vocab) and vocab.tokenizer == NLTK:
    return None
  return max_len


def bucket_length(lengths: np.ndarray, buckets: Sequence[int]) -> int:
  """Smallest bucket ``>= max(lengths)`` (or ``max(lengths)`` beyond the last):
  the static length to trim a padded batch to so the text GRU scans only as far
  as needed while jit sees few distinct shapes."""
  longest = int(np.max(lengths)) if len(lengths) else 1
  for b in sorted(buckets):
    if b >= longest:
      return int(b)
  return longest


def pad_sequences(
  seqs: Sequence[Sequence[int]], pad_id: int, width: int | None
) -> tuple[np.ndarray, np.ndarray]:
  """``(ids [B, W], lengths [B])``, int32: each sequence left-aligned, the rest ``pad_id``;
  ``W`` is ``width`` or the longest sequence."""
  width = width if width is not None else max((len(s) for s in seqs), default=1)
  ids = np.full((len(seqs), width), pad_id, np.int32)
  lengths = np.zeros((len(seqs),), np.int32)
  for i, seq in enumerate(seqs):
    ids[i, : len(seq)] = seq
    lengths[i] = len(seq)
  return ids, lengths
