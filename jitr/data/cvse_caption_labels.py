"""CVSE's official concept labels of a caption, as its ``data.py`` computes them.

For a validation or test caption (``PrecompDataset_Flickr30k.__getitem__`` and
``PrecompDataset.__getitem__``, any split but ``train``), the official code, run with
Python 3, computes:

1. ``sent = str(caption.strip()).lstrip('b')`` of the caption's bytes: the Python 3
   ``str`` of the bytes (:func:`jitr.data.caption_forms.python3_bytes`, ``b'...'``) less
   its leading ``b``, so the sentence is the caption between quotes (``'a dog .'``, or
   ``"a man's dog ."`` for a caption holding ``'`` but no ``"``), non-ASCII bytes written
   ``\\xc3\\xa9``;
2. its words ``nltk.tokenize.word_tokenize(sent.lower())``
   (:func:`jitr.data.nltk_tokens.nltk_tokens`);
3. each word's lemma ``WordNetLemmatizer().lemmatize(word)``
   (:class:`jitr.data.wordnet_nouns.NounLemmatizer`);
4. label ``c`` is 1 where a lemma equals ``name_concepts[c]`` for the FIRST such ``c``
   (``self.name_concepts.index(word_lemma)``), ``name_concepts`` being the lemmas of the
   keys of ``category_concepts.json`` in file order (``__init__``).

So a plural concept whose lemma is another concept's (``dogs`` after ``dog``) is never
set: its words set the first. :func:`official_caption_labels` computes the labels of many
captions; a caption's words are lemmatised once per distinct word.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jitr.data.nltk_tokens import nltk_tokens
from jitr.data.wordnet_nouns import NounLemmatizer


def label_sentence(caption: str) -> str:
  """``str(caption.strip()).lstrip('b')`` of the caption's UTF-8 bytes (Python 3).

  >>> print(label_sentence("A dog ."), label_sentence("A man's dog"))
  'A dog .' "A man's dog"
  """
  return str(caption.encode("utf-8").strip()).lstrip("b")


def concept_positions(words: Sequence[str], lemmatizer: NounLemmatizer) -> dict[str, int]:
  """Lemma -> the first position ``c`` whose concept word ``words[c]`` has that lemma
  (``name_concepts.index``).

  >>> lemmatizer = NounLemmatizer(frozenset({"dog", "cat"}), {})
  >>> concept_positions(["dog", "dogs", "cats"], lemmatizer)
  {'dog': 0, 'cat': 2}
  """
  positions: dict[str, int] = {}
  for c, word in enumerate(words):
    positions.setdefault(lemmatizer.lemmatize(word), c)
  return positions


def official_caption_labels(
  captions: Sequence[str], words: Sequence[str], lemmatizer: NounLemmatizer
) -> np.ndarray:
  """uint8 ``[len(captions), C]``: row ``k`` is caption ``k``'s official labels over the
  ``C`` concept ``words`` (module docstring: 1 at the first concept whose lemma is the
  lemma of one of the caption's words)."""
  positions = concept_positions(words, lemmatizer)
  labels = np.zeros((len(captions), len(words)), np.uint8)
  for k, caption in enumerate(captions):
    for word in nltk_tokens(label_sentence(caption)):
      c = positions.get(lemmatizer.lemmatize(word))
      if c is not None:
        labels[k, c] = 1
  return labels
