"""The string a caption's words are read from: the caption itself, or the Python 3
``str`` of its bytes, as CVSE's official data loader reads it.

CVSE's ``data.py`` (BruceW91/CVSE, run with Python 3: its repository holds
``__pycache__/data.cpython-36.pyc``) reads the caption file in binary
(``open(..., 'rb')``, ``line.strip()``), so each caption is ``bytes``, and takes its word
ids from ``nltk.tokenize.word_tokenize(str(caption).lower())``. In Python 3
``str(b"A dog .")`` is the text ``"b'A dog .'"`` (``repr`` of the bytes: ``b``, a quote,
the bytes with non-ASCII ones and backslashes escaped, the quote), so every caption's first
word carries ``b'`` (``b'a``, ``b'two``) and an extra ``'`` ends it. The code was written for
Python 2, where ``str`` of a byte string is the caption itself.

:data:`CAPTION_FORMS` names the two forms: ``"text"`` (the caption) and
``"python3_bytes"`` (``str(caption.encode("utf-8"))``). jitr reads captions as UTF-8 text
and strips each line's whitespace, so the bytes are the file's line less its surrounding
whitespace; a line that ends in non-ASCII whitespace (e.g. U+00A0), which ``bytes.strip``
keeps, is the one case where they are not the official bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

TEXT, PYTHON3_BYTES = "text", "python3_bytes"


def python3_bytes(caption: str) -> str:
  r"""``str`` of the caption's UTF-8 bytes in Python 3, as CVSE's ``data.py`` reads it.

  >>> print(python3_bytes("A dog ."), python3_bytes("A man's café ."))
  b'A dog .' b"A man's caf\xc3\xa9 ."
  """
  return str(caption.encode("utf-8"))


def as_text(caption: str) -> str:
  """The caption itself."""
  return caption


CAPTION_FORMS: dict[str, Callable[[str], str]] = {TEXT: as_text, PYTHON3_BYTES: python3_bytes}
"""Caption form name -> the string a caption's words are read from."""


def caption_forms(captions: Iterable[str], form: str) -> list[str]:
  """Each caption in the form named ``form`` (:data:`CAPTION_FORMS`), in order."""
  rewrite = CAPTION_FORMS[form]
  return [rewrite(c) for c in captions]
