"""The official VSE∞ training augmentation of precomp captions and region sets.

Both follow woodfrog/vse_infty, ``lib/datasets/image_caption.py`` (commit 29df9d65).

Captions (:func:`augment_caption`, after ``process_caption(tokenizer, tokens, train)``):
for each basic word in order, the official draws ``prob = random.random()``; when
``prob < 0.20 and train`` it sets ``prob /= 0.20`` and

- ``prob < 0.5``: every piece of the word becomes ``[MASK]`` (half of the chosen words);
- ``prob < 0.6``: every piece becomes ``random.choice(list(tokenizer.vocab.keys()))``, one
  draw per piece, of any vocabulary token, special and ``[unused]`` ones included (a
  tenth);
- otherwise the word is deleted: its pieces are appended, their positions recorded in
  ``deleted_idx`` and removed at the end (four tenths; the official comment "rest 10%
  randomly keep current token" does not describe what the code does);

any other word keeps its pieces. The ids are ``[CLS]``, the kept pieces, ``[SEP]``.
Overall a word is masked with probability 0.2 x 0.5 = 0.10, replaced 0.2 x 0.1 = 0.02 and
deleted 0.2 x 0.4 = 0.08. Every word may be deleted, leaving ``[CLS] [SEP]``.

Regions (:func:`drop_regions`, after ``PrecompRegionDataset.__getitem__``): at training
time ``rand_list = np.random.rand(num_features)`` and the regions kept are
``image[np.where(rand_list > 0.20)]``, in their order. There is no floor: when every draw
is at most 0.20 no region is kept (probability 0.2^36 for 36 regions).

The draws come from ``rng``: a ``numpy.random.Generator``, or any object with the same
``random()`` (one uniform float in [0, 1)), ``random(n)`` (n of them) and ``integers(n)``
(a uniform int in [0, n)) methods, so a test can hand the same draws to the official code.
A caption draws, in order, one ``random()`` per word and, for a replaced word, one
``integers(vocab_size)`` per piece, as the official's ``random.random()`` and
``random.choice``. ``train=False`` draws nothing (the official draws ``random.random()``
per word at evaluation too, and ignores it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jitr.data.wordpiece import WordPiece

# A chosen word's ``prob / probability`` below 0.5 masks it, from 0.5 below 0.6 replaces
# it, from 0.6 deletes it.
_MASK_BELOW = 0.5
_REPLACE_BELOW = 0.6


def augment_caption(
  word_ids: Sequence[Sequence[int]],
  rng: np.random.Generator,
  tokenizer: WordPiece,
  probability: float = 0.2,
  train: bool = True,
) -> np.ndarray:
  """The int32 ids of a caption, given as the piece ids of each basic word
  (:meth:`WordPiece.word_ids`), augmented as the official ``process_caption`` does (module
  docstring), between ``[CLS]`` and ``[SEP]``; with ``train=False``, the pieces unchanged."""
  _check_probability(probability)
  out: list[int] = [tokenizer.cls_id]
  for pieces in word_ids:
    if train:
      out.extend(_augment_word(pieces, rng, tokenizer, probability))
    else:
      out.extend(int(piece) for piece in pieces)
  out.append(tokenizer.sep_id)
  return np.asarray(out, dtype=np.int32)


def _augment_word(
  pieces: Sequence[int], rng: np.random.Generator, tokenizer: WordPiece, probability: float
) -> list[int]:
  """One word's ids after one draw: kept, masked, replaced (a draw per piece) or deleted."""
  prob = float(rng.random())
  if prob >= probability:
    return [int(piece) for piece in pieces]
  prob /= probability
  if prob < _MASK_BELOW:
    return [tokenizer.mask_id] * len(pieces)
  if prob < _REPLACE_BELOW:
    choices = tokenizer.choice_ids
    return [int(choices[int(rng.integers(len(choices)))]) for _ in pieces]
  return []


def _check_probability(probability: float) -> None:
  """``probability`` must lie in [0, 1]."""
  if not 0.0 <= probability <= 1.0:
    raise ValueError(f"augment_caption: probability is {probability!r}; expected 0 <= p <= 1")


def drop_regions(
  regions: np.ndarray, rng: np.random.Generator, keep_above: float = 0.2
) -> np.ndarray:
  """The rows of ``regions`` ``[R, D]`` whose draw ``rng.random(R)`` exceeds
  ``keep_above``, in order; possibly none (module docstring)."""
  regions = np.asarray(regions)
  if regions.ndim != 2:
    raise ValueError(f"drop_regions: regions has shape {regions.shape}; expected [R, D]")
  draws = np.asarray(rng.random(regions.shape[0]))
  return regions[draws > keep_above]
