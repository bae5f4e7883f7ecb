"""A run's vocabulary against its training captions: the share of their words it knows.

:func:`check_vocab_coverage` refuses, before anything is written, a vocabulary that covers
less than ``config.vocab_min_coverage`` of the training captions' words
(:func:`jitr.data.vocab_coverage.word_coverage`): such a run trains on the unknown token
(e.g. a 7-word vocabulary, 95% ``<unk>``); ``0`` turns the floor off. Under
:data:`WARN_BELOW` (but above the floor) the run goes on and the coverage is logged.
"""

from __future__ import annotations

from absl import logging

from jitr.data import pairs
from jitr.data.tower_text_vocab import TowerTextVocab
from jitr.data.vocab import UNK_ID
from jitr.data.vocab_coverage import word_coverage
from jitr.data.wordpiece_vocab import WordPieceVocab

WARN_BELOW = 0.9
"""Coverage under which a run logs a warning with its coverage."""


def unknown_id(vocab) -> int:
  """The id a word the vocabulary lacks encodes to: ``<unk>``, or WordPiece's ``[UNK]``."""
  return vocab.tokenizer.unk_id if isinstance(vocab, WordPieceVocab) else UNK_ID


def check_vocab_coverage(floor: float, vocab, train: pairs.RetrievalSplit) -> float:
  """The coverage of ``train``'s captions by ``vocab``; refused in one line under
  ``floor`` (the run's ``config.vocab_min_coverage``; module docstring). A split of text
  vectors (a labelled vector dataset) has no words, and a text tower's byte-level BPE
  knows every word: 1."""
  if train.tokens is None or isinstance(vocab, TowerTextVocab):
    return 1.0
  coverage, words = word_coverage(train.tokens, train.lengths, unknown_id(vocab))
  what = (
    f"the vocabulary ({len(vocab):,} tokens) knows {100 * coverage:.1f}% of the "
    f"{words:,} words of the training captions ({100 * (1 - coverage):.1f}% unknown)"
  )
  if coverage < floor:
    raise ValueError(
      f"config.vocab_min_coverage: {what}, under the floor of {100 * floor:g}%: the run "
      "would learn from the unknown token; use a vocabulary of these captions (and their "
      "tokenizer), or set --config.vocab_min_coverage=0 to train anyway"
    )
  if coverage < WARN_BELOW:
    logging.warning("%s", what)
  return coverage
