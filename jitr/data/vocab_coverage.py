"""How much of a split's caption words a vocabulary covers (numpy only).

A caption encodes as ``BOS w_1 .. w_n EOS`` (``<start>`` / ``<end>``, or WordPiece's
``[CLS]`` / ``[SEP]``) padded after its length; a word the vocabulary lacks is its unknown
id (``<unk>``, ``[UNK]``). The coverage of a split is

    coverage = 1 - #{w_k = unknown id} / #{w_k}

over the words of every caption (the boundary tokens and the padding not counted).
A run whose vocabulary covers little of its training captions trains on almost no words:
``jitr.experiment.train`` refuses one under ``config.vocab_min_coverage``.
"""

from __future__ import annotations

import numpy as np


def word_coverage(tokens: np.ndarray, lengths: np.ndarray, unknown_id: int) -> tuple[float, int]:
  """``(coverage, words)`` of captions ``tokens`` ``[N, L]`` of ``lengths`` ``[N]`` (the
  module docstring's formula); ``(1.0, 0)`` when there is no word at all.

  >>> tokens = np.array([[1, 5, 3, 2, 0], [1, 3, 3, 6, 2]])
  >>> word_coverage(tokens, np.array([4, 5]), unknown_id=3)
  (0.4, 5)
  """
  tokens, lengths = np.asarray(tokens), np.asarray(lengths)
  positions = np.arange(tokens.shape[1])[None, :]
  words = (positions >= 1) & (positions < lengths[:, None] - 1)
  count = int(words.sum())
  if count == 0:
    return 1.0, 0
  unknown = int(((tokens == unknown_id) & words).sum())
  return 1.0 - unknown / count, count
