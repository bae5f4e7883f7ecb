"""A Hugging Face ``tokenizer.json`` as open_clip's ``HFTokenizer`` runs it (SigLIP's text).

open_clip tokenises SigLIP captions with the model's Hugging Face tokenizer (SigLIP's T5
SentencePiece vocabulary, ``timm/ViT-B-16-SigLIP``) after its ``canonicalize`` cleaning:

1. ``ftfy.fix_text``, HTML entities unescaped twice, stripped (open_clip's ``basic_clean``);
2. ``_`` to a space, ASCII punctuation (``string.punctuation``) removed, lower case,
   whitespace runs to one space, stripped (big_vision's ``canonicalize_text``);
3. the tokenizer's ids with its special tokens (T5: ``</s>`` at the end), cut to
   ``context_length`` (specials kept) and padded with its pad token to exactly that length
   (``padding="max_length", truncation=True``): ``int32 [N, context_length]``.

The folder is the user's copy of the model's tokenizer files (``tokenizer.json``; the pad
token from ``tokenizer_config.json`` or ``special_tokens_map.json``, else ``<pad>``), read
with the ``tokenizers`` library: nothing is downloaded.
"""

from __future__ import annotations

import html
import os
import string
from collections.abc import Sequence

import ftfy
import numpy as np
from tokenizers import Tokenizer

from jitr import fileio, paths

_PUNCTUATION = str.maketrans("", "", string.punctuation)


def canonicalize(text: str) -> str:
  """Steps 1-2 (open_clip's ``_clean_canonicalize``)."""
  text = html.unescape(html.unescape(ftfy.fix_text(text))).strip()
  text = text.replace("_", " ").translate(_PUNCTUATION).lower()
  return " ".join(text.split()).strip()


def _pad_token(folder: str) -> str:
  """The pad token the folder's config files name (a string or ``{"content": ...}``)."""
  for name in ("tokenizer_config.json", "special_tokens_map.json"):
    path = os.path.join(folder, name)
    if paths.isfile(path):
      settings = fileio.read_json(path)
      if not isinstance(settings, dict):
        raise ValueError(f"{path}: holds a JSON {type(settings).__name__}, expected an object")
      token = settings.get("pad_token")
      if isinstance(token, dict):
        token = token.get("content")
      if token:
        return token
  return "<pad>"


class HfTextTokenizer:
  """``HfTextTokenizer(folder, context_length)(captions) -> int32 [N, context_length]``."""

  def __init__(self, folder: str, context_length: int):
    path = os.path.join(folder, "tokenizer.json")
    if not paths.isfile(path):
      raise FileNotFoundError(
        f"{folder}: no tokenizer.json (expected a Hugging Face tokenizer folder)"
      )
    with paths.open(path) as f:
      try:
        self.tokenizer = Tokenizer.from_str(f.read())
      except Exception as err:  # tokenizers raises its own exception type
        raise ValueError(
          f"{path}: not a readable tokenizer.json ({' '.join(str(err).split())})"
        ) from None
    pad = _pad_token(folder)
    self.pad_id = self.tokenizer.token_to_id(pad)
    if self.pad_id is None:
      raise ValueError(f"{path}: the pad token {pad!r} is not in the vocabulary")
    self.context_length = context_length
    self.tokenizer.enable_truncation(max_length=context_length)
    self.tokenizer.enable_padding(length=context_length, pad_id=self.pad_id, pad_token=pad)

  def __call__(self, texts: str | Sequence[str], context_length: int | None = None) -> np.ndarray:
    texts = [texts] if isinstance(texts, str) else list(texts)
    if context_length not in (None, self.context_length):
      raise ValueError(
        f"context_length {context_length}: this tokenizer pads to {self.context_length}"
      )
    encodings = self.tokenizer.encode_batch([canonicalize(t) for t in texts])
    return np.asarray([e.ids for e in encodings], np.int32).reshape(len(texts), self.context_length)
