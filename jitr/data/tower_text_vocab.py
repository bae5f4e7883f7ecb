"""A run's vocabulary when its captions are a CLIP / SigLIP text tower's token ids.

:class:`TowerTextVocab` has the word vocabulary's interface (``len``, ``encode_batch``,
``save``) over the tower's tokenizer: CLIP's BPE (:class:`jitr.data.ClipBpe`, OpenAI's
merges) or a Hugging Face ``tokenizer.json`` folder (:class:`jitr.data.HfTextTokenizer`,
SigLIP's). Rules:

- Every caption is ``context_length`` ids as open_clip's tokenizer makes them (CLIP:
  ``<start_of_text> ... <end_of_text>``, cut with the end kept last, 0-padded; SigLIP: the
  tokenizer's ids padded with its pad token).
- ``lengths`` are what a batch may be cut to: through the end token for a causal tower
  (its outputs up to the end token do not see later positions, so a batch cut to its
  longest caption embeds as the full length does), the whole ``context_length`` for a
  tower without a causal mask (SigLIP pools the last position).
- A workdir's ``vocab.json`` holds ``{"tower_text": {"tokenizer": "clip_bpe" | FOLDER,
  "context_length": L, "causal": bool, "size": V}}``: the vocabulary is read again from it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import numpy as np

from jitr import fileio, paths
from jitr.data.clip_bpe import ClipBpe
from jitr.data.hf_text_tokenizer import HfTextTokenizer

CLIP_BPE = "clip_bpe"
"""The ``tokenizer`` of CLIP's BPE (OpenAI's merges, shipped with jitr)."""


@dataclasses.dataclass(frozen=True, eq=False)
class TowerTextVocab:
  """A text tower's tokenizer as a run's vocabulary (module docstring).

  Attributes:
    tokenizer: :data:`!CLIP_BPE` or a Hugging Face tokenizer folder.
    context_length: the ids of every caption.
    causal: whether the tower masks later positions (``lengths`` through the end token).
    size: the ids the tower embeds (its ``vocab_size``).
  """

  tokenizer: str
  context_length: int
  causal: bool
  size: int

  def __post_init__(self):
    if self.tokenizer == CLIP_BPE:
      impl = ClipBpe(context_length=self.context_length)
    else:
      try:
        impl = HfTextTokenizer(self.tokenizer, self.context_length)
      except (OSError, ValueError) as err:
        raise ValueError(f"config.model.tokenizer: {err}") from None
    object.__setattr__(self, "_impl", impl)

  def __len__(self) -> int:
    return self.size

  def __eq__(self, other: object) -> bool:
    return isinstance(other, TowerTextVocab) and self.record() == other.record()

  __hash__ = None

  @property
  def pad_id(self) -> int:
    """The id that pads a caption (0 for CLIP's BPE)."""
    return int(getattr(self._impl, "pad_id", 0))

  def encode_batch(
    self, texts: Sequence[str], *, max_len: int | None = None
  ) -> tuple[np.ndarray, np.ndarray]:
    """``(ids [B, context_length], lengths [B])`` int32 (module docstring); ``max_len``
    is not used: the tower's context length is every caption's."""
    del max_len
    ids = np.asarray(self._impl(list(texts), self.context_length), np.int32)
    if not self.causal:
      return ids, np.full(len(ids), self.context_length, np.int32)
    used = ids != self.pad_id
    last = self.context_length - np.argmax(used[:, ::-1], axis=1)
    return ids, np.where(used.any(axis=1), last, 1).astype(np.int32)

  def record(self) -> dict:
    """What ``vocab.json`` holds of it."""
    return {
      "tokenizer": self.tokenizer,
      "context_length": self.context_length,
      "causal": self.causal,
      "size": self.size,
    }

  def save(self, path: str | os.PathLike) -> None:
    """Writes ``{"tower_text": record}`` as JSON, atomically."""
    fileio.write_json_atomic(path, {"tower_text": self.record()})


def saved_tower_text(path: str) -> TowerTextVocab | None:
  """The :class:`TowerTextVocab` a workdir's ``vocab.json`` records, or ``None`` when it
  records none (a word or WordPiece vocabulary) or there is no such file."""
  if not paths.isfile(path):
    return None
  data = fileio.read_json(path)
  record = data.get("tower_text") if isinstance(data, dict) else None
  if not isinstance(record, dict):
    return None
  try:
    return TowerTextVocab(
      str(record["tokenizer"]),
      int(record["context_length"]),
      bool(record["causal"]),
      int(record["size"]),
    )
  except (KeyError, TypeError) as err:
    raise ValueError(f"{path}: tower_text lacks {err}") from None
