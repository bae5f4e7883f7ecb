"""A run's vocabulary when its captions are read as the official VSE∞ reads them.

With ``config.text.pretrained`` (a Hugging Face BERT folder) the run's vocabulary is the
folder's ``vocab.txt`` and every caption encoded by ``WordPiece.encode``: ``[CLS]``, the
pieces of each basic word, ``[SEP]``. Rules:

- A token's id is its line number in ``vocab.txt``; the vocabulary's size (what the
  network embeds) is the number of lines.
- A caption longer than ``max_len`` ids is cut to its first ``max_len - 1`` ids and
  ``[SEP]``: ``[SEP]`` stays last, as jitr's word captions keep ``<end>``. (The official
  code cuts nothing; Flickr30K and COCO captions fit in the paper configs' 64.)
- Padding is ``[PAD]``'s id (0 in BERT's vocabularies); every caption has at least its
  ``[CLS]`` and ``[SEP]``.
- A workdir's ``vocab.json`` holds ``{"words": [...], "wordpiece": {"vocab_file": PATH,
  "sha256": HEX}}``: the tokens by id and the file they came from, so an evaluation can
  tell whether the folder still holds the same vocabulary; the tokens alone tokenise as
  the file does (:func:`load_workdir_vocab`: what a teacher or ``init_from`` workdir is
  read with).

:class:`CaptionWords` keeps every caption's words as piece ids, flat (what the training
augmentation, :func:`jitr.data.caption_augment.augment_caption`, rewrites per batch).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Sequence

import numpy as np

from jitr import fileio, paths
from jitr.data.tower_text_vocab import TowerTextVocab, saved_tower_text
from jitr.data.vocab import Vocab, pad_sequences
from jitr.data.wordpiece import WordPiece, read_vocab_lines

VOCAB_TXT = "vocab.txt"
"""The vocabulary file of a Hugging Face BERT folder."""


@dataclasses.dataclass(frozen=True, eq=False)
class WordPieceVocab:
  """The WordPiece vocabulary of a BERT folder, with the word vocabulary's interface
  (``len``, ``words``, ``encode_batch``, ``save``).

  Attributes:
    tokenizer: the :class:`WordPiece` of ``vocab.txt``.
    words: the token of each id (line) of ``vocab.txt``.
    vocab_file: the ``vocab.txt`` read.
    sha256: the hex SHA-256 of the file's bytes.
  """

  tokenizer: WordPiece
  words: tuple[str, ...]
  vocab_file: str
  sha256: str

  @classmethod
  def from_folder(cls, folder: str) -> WordPieceVocab:
    """The vocabulary of ``folder/vocab.txt``; ``FileNotFoundError`` / ``ValueError`` (one
    line naming the file) when it is missing or not a BERT vocabulary."""
    path = os.path.join(folder, VOCAB_TXT)
    lines = read_vocab_lines(path)
    with paths.open(path, "rb") as f:
      digest = hashlib.sha256(f.read()).hexdigest()
    return cls(WordPiece.from_tokens(lines, source=path), tuple(lines), path, digest)

  def __len__(self) -> int:
    return len(self.words)

  def __eq__(self, other: object) -> bool:
    return isinstance(other, WordPieceVocab) and self.words == other.words

  __hash__ = None

  def encode(self, text: str, max_len: int | None = None) -> np.ndarray:
    """The int32 ids of ``text`` (:meth:`WordPiece.encode`), cut to ``max_len`` with
    ``[SEP]`` last (module docstring)."""
    return truncate(self.tokenizer.encode(text), max_len, self.tokenizer.sep_id)

  def encode_batch(
    self, texts: Sequence[str], *, max_len: int | None = None
  ) -> tuple[np.ndarray, np.ndarray]:
    """``(ids [B, L], lengths [B])``, int32, padded with ``[PAD]``: ``L = max_len`` when
    given (longer captions cut, ``[SEP]`` kept last), else the longest caption."""
    if max_len is not None and max_len < 2:
      raise ValueError(f"encode_batch: max_len={max_len} too small; expected >= 2")
    seqs = [self.encode(text, max_len) for text in texts]
    return pad_sequences(seqs, self.tokenizer.pad_id, max_len)

  def save(self, path: str | os.PathLike) -> None:
    """Writes the tokens and their file (module docstring) as JSON, atomically."""
    fileio.write_json_atomic(
      path,
      {
        "words": list(self.words),
        "wordpiece": {"vocab_file": self.vocab_file, "sha256": self.sha256},
      },
      indent=None,
      sort_keys=False,
      ensure_ascii=False,
    )


def truncate(ids: np.ndarray, max_len: int | None, sep_id: int) -> np.ndarray:
  """``ids`` when at most ``max_len`` long (or no ``max_len``), else its first
  ``max_len - 1`` ids and ``sep_id``."""
  if max_len is None or len(ids) <= max_len:
    return ids
  return np.append(ids[: max_len - 1], np.int32(sep_id)).astype(np.int32)


def load_workdir_vocab(path: str) -> Vocab | WordPieceVocab | TowerTextVocab:
  """A workdir's ``vocab.json``: the :class:`WordPieceVocab` of its tokens when it has a
  ``wordpiece`` record, the text tower's tokenizer when it has a ``tower_text`` one
  (:func:`!jitr.data.tower_text_vocab.saved_tower_text`), else :meth:`Vocab.load`'s word
  vocabulary (its errors, one line)."""
  tower = saved_tower_text(path)
  if tower is not None:
    return tower
  record = saved_wordpiece(path)
  if record is None:
    return Vocab.load(path)
  words = fileio.read_json(path).get("words")
  if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
    raise ValueError(f'{path}: expected {{"words": [str, ...], "wordpiece": {{...}}}}')
  tokenizer = WordPiece.from_tokens(words, source=path)
  return WordPieceVocab(
    tokenizer, tuple(words), str(record.get("vocab_file")), str(record.get("sha256"))
  )


def saved_wordpiece(path: str) -> dict | None:
  """The ``wordpiece`` record (``vocab_file``, ``sha256``) of a workdir's ``vocab.json``,
  or ``None`` when it has none (a word vocabulary) or no such file."""
  if not paths.isfile(path):
    return None
  data = fileio.read_json(path)
  record = data.get("wordpiece") if isinstance(data, dict) else None
  return record if isinstance(record, dict) else None


@dataclasses.dataclass(frozen=True)
class CaptionWords:
  """The piece ids of every caption's basic words, flat.

  Caption ``c``'s words are ``word_starts[caption_starts[c]:caption_starts[c + 1]]``; word
  ``w``'s piece ids are ``pieces[word_starts[w]:word_starts[w + 1]]``.
  """

  pieces: np.ndarray
  word_starts: np.ndarray
  caption_starts: np.ndarray

  @classmethod
  def build(cls, tokenizer: WordPiece, texts: Sequence[str]) -> CaptionWords:
    """The words of ``texts`` (:meth:`WordPiece.word_ids`), in caption order."""
    pieces: list[int] = []
    word_starts = [0]
    caption_starts = [0]
    for text in texts:
      for word in tokenizer.word_ids(text):
        pieces.extend(int(p) for p in word)
        word_starts.append(len(pieces))
      caption_starts.append(len(word_starts) - 1)
    return cls(
      np.asarray(pieces, np.int32), np.asarray(word_starts, np.int64), np.asarray(caption_starts)
    )

  def __len__(self) -> int:
    return len(self.caption_starts) - 1

  def of(self, caption: int) -> list[np.ndarray]:
    """Caption ``caption``'s words, each its piece ids."""
    first, last = self.caption_starts[caption], self.caption_starts[caption + 1]
    starts = self.word_starts
    return [self.pieces[starts[w] : starts[w + 1]] for w in range(first, last)]


def check_same_wordpiece(vocab: object, saved_path: str) -> None:
  """Raises ``ValueError`` (one line naming the ``vocab.txt``) when ``vocab`` is a
  :class:`WordPieceVocab` whose file's SHA-256 differs from the one ``saved_path`` (a
  workdir's ``vocab.json``) records; anything else passes."""
  record = saved_wordpiece(saved_path)
  if not isinstance(vocab, WordPieceVocab) or record is None:
    return
  if record.get("sha256") != vocab.sha256:
    raise ValueError(
      f"{vocab.vocab_file}: not the vocabulary the run was trained with (sha256 "
      f"{record.get('sha256')} in {saved_path}, {vocab.sha256} now)"
    )
