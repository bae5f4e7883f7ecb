"""Which tokenizer splits a run's captions into the words of its vocabulary.

``config.text.tokenizer`` (configs/default.py) names it:

- ``""`` (the default) follows the vocabulary: ``config.vocab_file``'s tokenizer when that
  is set (an official vocabulary is ``"nltk"``; jitr's ``vocab.json`` says which), else
  ``"jitr"``;
- ``"jitr"`` (:func:`jitr.data.vocab.tokenize`) or ``"nltk"`` (the official
  ``nltk.word_tokenize(caption.lower())``, :mod:`jitr.data.nltk_tokens`) is the tokenizer
  of the vocabulary jitr builds from the training captions; a ``config.vocab_file`` of the
  other tokenizer is refused in one line.

With ``config.text.pretrained`` WordPiece tokenises the captions and the field must be
``""``. ``config.json`` records the resolved name (:func:`resolved_tokenizer`), so a
workdir's evaluation, resume, teacher or fine-tuning reads its captions as its run did.
"""

from __future__ import annotations

from typing import Any

import ml_collections

from jitr.data import vocab as vocab_lib
from jitr.data.official_vocab import read_vocab_file

# config.text.tokenizer's values: "" (the vocabulary's) and the tokenizers' names
TOKENIZER_CHOICES: tuple[str, ...] = ("", *vocab_lib.TOKENIZERS)


def check_tokenizer_setting(text: Any) -> None:
  """Raises ``ValueError`` (one line) unless ``text.tokenizer`` (``text``: the run's
  ``config.text``) is one of :data:`TOKENIZER_CHOICES`, and ``""`` with ``text.pretrained``."""
  name = text.tokenizer
  if not isinstance(name, str) or name not in TOKENIZER_CHOICES:
    raise ValueError(
      f"config.text.tokenizer: expected one of {', '.join(map(repr, TOKENIZER_CHOICES))} "
      f"('' follows the vocabulary), got {name!r}"
    )
  if name and text.pretrained:
    raise ValueError(
      f"config.text.tokenizer: expected '' with config.text.pretrained (WordPiece tokenises "
      f"the captions), got {name!r}"
    )


def built_tokenizer(text: Any) -> str:
  """The tokenizer of the vocabulary a run builds from its training captions:
  ``text.tokenizer`` (``text``: the run's ``config.text``), ``"jitr"`` when that is ``""``."""
  return text.tokenizer or vocab_lib.JITR


def check_vocab_tokenizer(text: Any, vocab: Any, source: str) -> None:
  """Raises ``ValueError`` (one line naming ``source``, where ``vocab`` came from) when
  ``text.tokenizer`` (``text``: the run's ``config.text``) names another tokenizer than the
  word vocabulary ``vocab``'s; ``""`` and a WordPiece vocabulary pass."""
  asked = text.tokenizer
  theirs = vocab.tokenizer if isinstance(vocab, vocab_lib.Vocab) else None
  if asked and theirs is not None and asked != theirs:
    raise ValueError(
      f"config.text.tokenizer: {asked!r}, but {source} is a vocabulary of the {theirs!r} "
      f"tokenizer; expected {theirs!r} or '' (the vocabulary's)"
    )


def resolved_tokenizer(text: Any, vocab_file: str) -> str:
  """What ``config.json`` records as ``text.tokenizer`` (``text``: the run's
  ``config.text``): ``""`` with ``text.pretrained``, else ``text.tokenizer`` when set, else
  the tokenizer of ``vocab_file`` (``config.vocab_file``, read here; its errors are one line
  starting with ``config.vocab_file``) when set, else ``"jitr"``."""
  if text.pretrained or text.tokenizer:
    return text.tokenizer
  if not vocab_file:
    return vocab_lib.JITR
  try:
    return read_vocab_file(vocab_file).tokenizer
  except (OSError, ValueError) as err:
    raise ValueError(f"config.vocab_file: {err}") from None


def with_official_tokenizer(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """A copy of ``config`` whose ``text.tokenizer`` is ``"nltk"``, the tokenizer of every
  official word vocabulary (:func:`jitr.data.official_vocab.read_official_vocab`): the
  setting of a run that ``jitr-import`` gives such a vocabulary before its
  ``config.vocab_file`` is written. A config asking for ``"jitr"`` is refused in one line; a
  WordPiece run (``config.text.pretrained``) is returned as it is."""
  if config.text.pretrained:
    return config
  asked = config.text.tokenizer
  if asked and asked != vocab_lib.NLTK:
    raise ValueError(
      f"config.text.tokenizer: {asked!r}, but an official vocabulary is a vocabulary of the "
      f"{vocab_lib.NLTK!r} tokenizer (the official code's); expected {vocab_lib.NLTK!r} or ''"
    )
  config = config.copy_and_resolve_references()
  config.text.tokenizer = vocab_lib.NLTK
  return config
