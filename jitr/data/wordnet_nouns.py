"""WordNet's noun lemmatiser, offline: nltk's ``WordNetLemmatizer().lemmatize(word)``.

CVSE's official ``data.py`` labels a caption with concepts by lemmatising each of its
words and each concept name with nltk's ``WordNetLemmatizer().lemmatize(word)`` (the part
of speech defaults to ``'n'``). nltk 3.10's lemmatiser is
``min(wn._morphy(word, 'n'), key=len)``, or ``word`` itself when that list is empty, and
its ``_morphy`` (``nltk/corpus/reader/wordnet.py``) computes, for a noun:

1. the candidates: ``noun.exc``'s base forms of ``word`` when ``word`` is an exception
   (a line ``word base ...``; a later line of the same word replaces the one before),
   else every ``word[:-len(suffix)] + ending`` of the detachment rules
   :data:`NOUN_RULES` whose suffix ends ``word``, in the rules' order;
2. ``[word] + candidates`` kept where they are lemmas of ``index.noun``, each once, in
   that order;

so :func:`noun_candidates` is ``_morphy`` and :meth:`NounLemmatizer.lemmatize` the
lemmatiser (``min`` keeps the first of equally short lemmas: ``men`` stays ``men``, a
lemma itself, rather than ``man``). Rules are applied once: nltk before 3.9 applied them
again to candidates that were not lemmas until one was (before nltk pull request 3225, 2024).

:func:`read_noun_lemmatizer` reads WordNet 3.0 from a folder holding ``index.noun`` and
``noun.exc``: nltk_data's ``corpora/wordnet`` (unzipped) or Debian's ``wordnet-base``
(``/usr/share/wordnet``), which hold the same two files. nltk's own reader is not needed
(it also wants ``lexnames``, which Debian does not ship, and reads only folders on
``nltk.data.path``). An ``index.noun`` line starting with a space is the licence header;
every other line starts with ``lemma n``. Every problem is one ``ValueError`` naming the
file and line (``FileNotFoundError`` for a missing file).
"""

from __future__ import annotations

import os
import types
from collections.abc import Mapping, Sequence

from jitr import fileio, paths

NOUN_INDEX = "index.noun"
NOUN_EXCEPTIONS = "noun.exc"
NOUN_RULES: tuple[tuple[str, str], ...] = (
  ("s", ""),
  ("ses", "s"),
  ("ves", "f"),
  ("xes", "x"),
  ("zes", "z"),
  ("ches", "ch"),
  ("shes", "sh"),
  ("men", "man"),
  ("ies", "y"),
)
"""nltk's ``MORPHOLOGICAL_SUBSTITUTIONS[NOUN]``: ``(suffix, ending)`` in the order tried."""
_FOLDER = "a WordNet 3.0 folder holding index.noun and noun.exc (nltk_data's corpora/wordnet "
_FOLDER += "or Debian's /usr/share/wordnet)"


def _lines(path: str) -> list[str]:
  """The lines of the UTF-8 text file ``path``; ``FileNotFoundError`` naming it when absent."""
  if not paths.isfile(path):
    raise FileNotFoundError(f"{path}: no such file; expected {_FOLDER}")
  try:
    return fileio.read_utf8_lines(path)
  except UnicodeError as err:
    raise ValueError(str(err)) from None


def read_noun_lemmas(path: str | os.PathLike) -> frozenset[str]:
  """The lemmas of WordNet's ``index.noun``: the first field of every line that does not
  start with a space (those are the licence header), each line's second field ``n``."""
  path = os.fspath(path)
  lemmas = set()
  for number, line in enumerate(_lines(path), start=1):
    if line.startswith(" "):
      continue
    fields = line.split()
    if len(fields) < 2 or fields[1] != "n":
      raise ValueError(
        f"{path}: line {number} is {line[:60]!r}; expected 'lemma n ...' (WordNet's noun index)"
      )
    lemmas.add(fields[0])
  if not lemmas:
    raise ValueError(f"{path}: holds no lemma; expected WordNet's noun index")
  return frozenset(lemmas)


def read_noun_exceptions(path: str | os.PathLike) -> Mapping[str, tuple[str, ...]]:
  """WordNet's ``noun.exc``: inflected form -> its base forms, from lines ``form base
  ...`` (a later line of the same form replaces the one before, as nltk reads it; blank
  lines are skipped)."""
  path = os.fspath(path)
  exceptions: dict[str, tuple[str, ...]] = {}
  for number, line in enumerate(_lines(path), start=1):
    fields = line.split()
    if not fields:
      continue
    if len(fields) < 2:
      raise ValueError(f"{path}: line {number} is {line!r}; expected 'form base ...'")
    exceptions[fields[0]] = tuple(fields[1:])
  return types.MappingProxyType(exceptions)


def noun_candidates(
  word: str, lemmas: frozenset[str], exceptions: Mapping[str, Sequence[str]]
) -> list[str]:
  """nltk's ``_morphy(word, 'n')``: ``[word]`` followed by ``word``'s exception base forms
  (when ``word`` is in ``exceptions``) or else its detachment candidates (:data:`NOUN_RULES`),
  kept where they are in ``lemmas``, each once, in that order.

  >>> noun_candidates("glasses", frozenset({"glass", "glasses"}), {})
  ['glasses', 'glass']
  """
  if word in exceptions:
    forms = list(exceptions[word])
  else:
    forms = [
      word[: -len(suffix)] + ending for suffix, ending in NOUN_RULES if word.endswith(suffix)
    ]
  return [form for form in dict.fromkeys([word, *forms]) if form in lemmas]


class NounLemmatizer:
  """nltk's ``WordNetLemmatizer().lemmatize(word)`` (part of speech ``'n'``) over one
  WordNet's noun lemmas and exceptions (module docstring); each word's lemma is computed
  once and remembered."""

  def __init__(self, lemmas: frozenset[str], exceptions: Mapping[str, Sequence[str]]):
    self.lemmas = frozenset(lemmas)
    self.exceptions = types.MappingProxyType(
      {form: tuple(bases) for form, bases in exceptions.items()}
    )
    self._lemma: dict[str, str] = {}

  def lemmatize(self, word: str) -> str:
    """The shortest of ``word``'s candidates (:func:`noun_candidates`; the first of equal
    length), or ``word`` when it has none.

    >>> NounLemmatizer(frozenset({"dog", "men", "man"}), {}).lemmatize("dogs")
    'dog'
    """
    lemma = self._lemma.get(word)
    if lemma is None:
      found = noun_candidates(word, self.lemmas, self.exceptions)
      lemma = self._lemma[word] = min(found, key=len) if found else word
    return lemma


def read_noun_lemmatizer(folder: str | os.PathLike) -> NounLemmatizer:
  """The :class:`NounLemmatizer` of the WordNet in ``folder`` (its ``index.noun`` and
  ``noun.exc``; module docstring).

  Raises:
    FileNotFoundError: a file is missing (the message names it and what the folder must
      hold).
    ValueError: a malformed line (the file and line named).
  """
  folder = os.fspath(folder)
  lemmas = read_noun_lemmas(os.path.join(folder, NOUN_INDEX))
  exceptions = read_noun_exceptions(os.path.join(folder, NOUN_EXCEPTIONS))
  return NounLemmatizer(lemmas, exceptions)
