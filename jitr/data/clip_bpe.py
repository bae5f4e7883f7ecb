"""CLIP's byte-level BPE tokenizer, as open_clip's ``SimpleTokenizer`` runs it.

The merges are OpenAI's ``bpe_simple_vocab_16e6.txt.gz`` (shipped with jitr, as with
open_clip; MIT licence): its lines 1..48,894 are the merges in rank order; the vocabulary is
the 256 byte symbols, the same with ``</w>``, one token per merge, then ``<start_of_text>``
(49,406) and ``<end_of_text>`` (49,407): 49,408 ids. A caption becomes ids in these steps:

1. Cleaning (open_clip's ``clean="lower"``): ``ftfy.fix_text``, HTML entities unescaped
   twice, whitespace runs to one space, stripped, lower-cased.
2. Words: the regex ``'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+``
   (case-insensitive; the special tokens match first).
3. Each word's UTF-8 bytes as byte symbols, ``</w>`` on the last; then the merge of lowest
   rank among adjacent pairs is applied everywhere, until no pair is a merge.
4. ``[SOT] ids [EOT]``, cut to ``context_length`` (the last kept id becomes EOT), padded
   with 0: ``int32 [N, context_length]``.
"""

from __future__ import annotations

import functools
import gzip
import html
import os
from collections.abc import Sequence

import ftfy
import numpy as np
import regex

VOCAB_FILE = os.path.join(os.path.dirname(__file__), "clip_bpe_vocab_16e6.txt.gz")
_MERGES = 49152 - 256 - 2


@functools.cache
def bytes_to_unicode() -> dict[int, str]:
  """Byte -> printable symbol: printable Latin-1 bytes map to themselves, the other 68 to
  ``chr(256 + n)`` in byte order (OpenAI's table)."""
  bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
  bs += list(range(ord("®"), ord("ÿ") + 1))
  cs = bs[:]
  n = 0
  for b in range(256):
    if b not in bs:
      bs.append(b)
      cs.append(256 + n)
      n += 1
  return dict(zip(bs, map(chr, cs), strict=True))


def clean_lower(text: str) -> str:
  """Step 1: ftfy, HTML unescaped twice, whitespace collapsed and stripped, lower case."""
  text = html.unescape(html.unescape(ftfy.fix_text(text))).strip()
  return " ".join(text.split()).lower()


class ClipBpe:
  """CLIP's tokenizer: ``ClipBpe()(captions, context_length=77) -> int32 [N, L]``;
  :meth:`~jitr.data.ClipBpe.encode` gives one caption's ids without SOT/EOT."""

  def __init__(self, vocab_file: str = VOCAB_FILE, context_length: int = 77):
    with gzip.open(vocab_file) as f:
      lines = f.read().decode("utf-8").split("\n")[1 : _MERGES + 1]
    merges = [tuple(line.split()) for line in lines]
    symbols = list(bytes_to_unicode().values())
    vocab = symbols + [s + "</w>" for s in symbols] + ["".join(m) for m in merges]
    vocab += ["<start_of_text>", "<end_of_text>"]
    self.encoder = {token: i for i, token in enumerate(vocab)}
    self.ranks = {merge: i for i, merge in enumerate(merges)}
    self.sot, self.eot = self.encoder["<start_of_text>"], self.encoder["<end_of_text>"]
    self.vocab_size = len(vocab)
    self.context_length = context_length
    self._byte = bytes_to_unicode()
    self._words = regex.compile(
      r"<start_of_text>|<end_of_text>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+",
      regex.IGNORECASE,
    )
    self._cache: dict[str, list[str]] = {}

  def _bpe(self, token: str) -> list[str]:
    """Step 3 for one word's byte symbols."""
    if token in ("<start_of_text>", "<end_of_text>"):
      return [token]
    if token in self._cache:
      return self._cache[token]
    word = [*token[:-1], token[-1] + "</w>"]
    while len(word) > 1:
      pairs = set(zip(word, word[1:], strict=False))
      best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
      if best not in self.ranks:
        break
      merged, i = [], 0
      while i < len(word):
        if i < len(word) - 1 and (word[i], word[i + 1]) == best:
          merged.append(word[i] + word[i + 1])
          i += 2
        else:
          merged.append(word[i])
          i += 1
      word = merged
    self._cache[token] = word
    return word

  def encode(self, text: str) -> list[int]:
    """One caption's BPE ids (steps 1-3)."""
    ids = []
    for word in self._words.findall(clean_lower(text)):
      symbols = "".join(self._byte[b] for b in word.encode("utf-8"))
      ids.extend(self.encoder[piece] for piece in self._bpe(symbols))
    return ids

  def __call__(self, texts: str | Sequence[str], context_length: int | None = None) -> np.ndarray:
    """``int32 [N, context_length]``: ``[SOT] ids [EOT]`` cut (EOT last) and 0-padded."""
    texts = [texts] if isinstance(texts, str) else list(texts)
    length = context_length or self.context_length
    out = np.zeros((len(texts), length), np.int32)
    for row, text in enumerate(texts):
      ids = [self.sot, *self.encode(text), self.eot]
      if len(ids) > length:
        ids = ids[:length]
        ids[-1] = self.eot
      out[row, : len(ids)] = ids
    return out
