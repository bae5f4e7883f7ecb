"""The string a run reads its captions' words from: ``config.text.caption_form``.

- ``"text"``: the caption itself;
- ``"python3_bytes"``: the Python 3 ``str`` of the caption's bytes, ``"b'a dog .'"``, as
  CVSE's official ``data.py`` tokenises it (:mod:`jitr.data.caption_forms`): the word ids
  an official CVSE checkpoint was trained and evaluated with. It needs the ``"nltk"``
  tokenizer (the official ``word_tokenize``): jitr's would split ``b'a`` into ``b`` and
  ``a``, a WordPiece vocabulary (``config.text.pretrained``) reads no words;
- ``""`` (the default) is ``"text"``, except that ``jitr-import`` of an official checkpoint
  makes it the form its codebase's data loader reads
  (:attr:`!jitr.models.official_format.OfficialFormat.caption_form`: CVSE's
  ``"python3_bytes"``; :func:`with_official_caption_form`).

Every split's captions take the form before they are tokenised (a vocabulary built by the
run is built from them too); concept labels are computed from the captions themselves
(:mod:`jitr.experiment.run_concepts`). ``config.json`` records the resolved form
(:func:`resolved_caption_form`).
"""

from __future__ import annotations

from typing import Any

import ml_collections

from jitr.data import vocab as vocab_lib
from jitr.data.caption_forms import CAPTION_FORMS, PYTHON3_BYTES, TEXT
from jitr.models.registry import MODELS

CAPTION_FORM_CHOICES: tuple[str, ...] = ("", *CAPTION_FORMS)
"""``config.text.caption_form``'s values: ``""`` (resolved) and the forms' names."""


def check_caption_form_setting(text: Any) -> None:
  """Raises ``ValueError`` (one line) unless ``text.caption_form`` (``text``: the run's
  ``config.text``) is one of :data:`CAPTION_FORM_CHOICES`, and ``"python3_bytes"`` comes
  with neither ``text.pretrained`` nor ``text.tokenizer`` ``"jitr"``."""
  form = text.caption_form
  if not isinstance(form, str) or form not in CAPTION_FORM_CHOICES:
    raise ValueError(
      f"config.text.caption_form: expected one of {', '.join(map(repr, CAPTION_FORM_CHOICES))} "
      f"('' is {TEXT!r} but for an imported official CVSE checkpoint), got {form!r}"
    )
  if form == PYTHON3_BYTES and (text.pretrained or text.tokenizer == vocab_lib.JITR):
    used = "WordPiece (config.text.pretrained)" if text.pretrained else "'jitr'"
    raise ValueError(
      f"config.text.caption_form: {PYTHON3_BYTES!r} is the string the official CVSE code "
      f"gives nltk's word_tokenize; it needs config.text.tokenizer {vocab_lib.NLTK!r}, not "
      f"{used}"
    )


def resolved_caption_form(text: Any) -> str:
  """What ``config.json`` records as ``text.caption_form`` (``text``: the run's
  ``config.text``): ``"text"`` for ``""``, else the form, once ``text.tokenizer`` is resolved
  (:func:`jitr.experiment.run_tokenizer.resolved_tokenizer`); ``"python3_bytes"`` with a
  tokenizer other than ``"nltk"`` (e.g. ``config.vocab_file``'s ``"jitr"``) is refused in
  one line."""
  form = text.caption_form or TEXT
  if form == PYTHON3_BYTES and text.tokenizer != vocab_lib.NLTK:
    raise ValueError(
      f"config.text.caption_form: {PYTHON3_BYTES!r} needs the {vocab_lib.NLTK!r} tokenizer, "
      f"but the run's is {text.tokenizer or 'WordPiece'!r}"
    )
  return form


def caption_form(text: Any) -> str:
  """The form of the run's captions' words: ``text.caption_form`` (``text``: the run's
  ``config.text``), ``"text"`` when ``""``."""
  return text.caption_form or TEXT


def official_caption_form(network: str) -> str:
  """The caption form the official code of the registered ``network`` reads (its
  :attr:`!jitr.models.Network.official` format's; ``""``: the caption itself, or no
  official checkpoint)."""
  official = MODELS[network].official if network in MODELS else None
  return official.caption_form if official is not None else ""


def with_official_caption_form(
  config: ml_collections.ConfigDict, network: str
) -> ml_collections.ConfigDict:
  """``config`` for a checkpoint of the official ``network``: a copy whose
  ``text.caption_form`` is that codebase's (:func:`official_caption_form`: CVSE's
  ``"python3_bytes"``) when the field is ``""``; ``config`` itself otherwise (a codebase
  that reads the caption itself, or a form the config names)."""
  form = official_caption_form(network)
  if not form or config.text.caption_form:
    return config
  config = config.copy_and_resolve_references()
  config.text.caption_form = form
  return config
