"""Docstrings and comments as the apps' ``--help`` prints them: plain text without Sphinx
markup (:func:`plain_text`) and a one-line first sentence (:func:`first_sentence`)."""

from __future__ import annotations

import re

# A field's meaning is one line: a first sentence longer than this is cut at its first
# top-level ": " or "; " (else at a word).
MEANING_WIDTH = 100


def plain_text(text: str) -> str:
  """``text`` without Sphinx markup: ````x```` -> ``x``, ``:func:`a.b``` (also ``!a.b``)
  -> ``a.b``, ``:class:`~a.B``` -> ``B``."""
  text = re.sub(r":[a-z]+(?::[a-z]+)?:`!?~([^`<]*?\.)?([^`.<]+)`", r"\2", text)
  text = re.sub(r":[a-z]+(?::[a-z]+)?:`!?([^`]+)`", r"\1", text)
  return re.sub(r"``(.+?)``", r"\1", text, flags=re.DOTALL)


def first_sentence(text: str, width: int = MEANING_WIDTH) -> str:
  """The first sentence of ``text`` (up to ". " before a capital letter), on one line; one
  longer than ``width`` is cut at its first ": " or "; " outside brackets, else after the
  last word that fits, ending in "...".

  >>> first_sentence("TFDS data dir; default: <workdir>/../tfds. Shared.")
  'TFDS data dir; default: <workdir>/../tfds.'
  """
  text = " ".join(text.split())
  match = re.search(r"[.!?](?=\s+[A-Z\"'(]|$)", text)
  sentence = text[: match.end()] if match else text
  if len(sentence) <= width:
    return sentence
  depth = 0
  for i, ch in enumerate(sentence):
    depth += ch in "([{"
    depth -= ch in ")]}"
    if depth == 0 and ch in ":;" and sentence[i + 1 : i + 2] == " " and 20 <= i <= width:
      return sentence[:i]
  return sentence[: sentence.rfind(" ", 0, width - 3)].rstrip(",;:") + "..."
