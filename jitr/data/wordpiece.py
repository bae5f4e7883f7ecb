"""WordPiece tokenization of captions, as BERT's uncased tokenizer does it.

The official VSE∞ (woodfrog/vse_infty, ``lib/datasets/image_caption.py``) turns a caption
into ids with ``BertTokenizer('bert-base-uncased')`` of transformers 2.1.0: the words are
``tokenizer.basic_tokenizer.tokenize(caption)``, the pieces of a word are
``tokenizer.wordpiece_tokenizer.tokenize(word)``, and the ids are those of
``[CLS] pieces... [SEP]``. :class:`WordPiece` follows the same rules, which give the same
ids as ``transformers.BertTokenizer(vocab=VOCAB_FILE, do_lower_case=True)``'s
``tokenize`` and ``convert_tokens_to_ids`` on captions.

Words (:meth:`WordPiece.words`), in this order:

1. Cleanup: NUL, U+FFFD and every character of Unicode category ``C*`` except tab, newline
   and carriage return are removed; space, tab, newline, carriage return and category
   ``Zs`` become a space.
2. Each CJK ideograph (U+4E00-9FFF, 3400-4DBF, 20000-2A6DF, 2A700-2B73F, 2B740-2B81F,
   2B820-2CEAF, F900-FAFF, 2F800-2FA1F) gets a space either side.
3. The text is split on whitespace (``str.split()``).
4. Each token is lower-cased (``str.lower``), then its accents are stripped: NFD, and the
   characters of category ``Mn`` removed.
5. Each token is split around punctuation: a punctuation character is a word of its own.
   Punctuation is every ASCII character that is not a letter, digit, space or control
   (codes 33-47, 58-64, 91-96, 123-126) and every character of category ``P*``.
6. Empty tokens are dropped.

Pieces (:meth:`WordPiece.pieces`): greedy longest-match-first. From the start of the word,
the longest prefix in the vocabulary is the first piece; from there on the longest next
substring whose ``##``-prefixed form is in the vocabulary, until the word is used up. A word
longer than ``max_input_chars_per_word`` (100) characters, or one where no substring
matches at some point, is the single piece ``[UNK]``.

Special tokens written in the text (``[MASK]``) are split like any other text, as
``basic_tokenizer.tokenize(caption)`` does (transformers' ``tokenize`` instead keeps them).

The vocabulary file holds one token per line; a token's id is its line number from 0 (a
token on two lines takes the later id, as transformers' ``load_vocab`` does). Lines end at
``\\n``, ``\\r\\n`` or ``\\r``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import unicodedata
from collections.abc import Mapping, Sequence

import numpy as np

from jitr import paths

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
"""The tokens every vocabulary must hold."""

MAX_INPUT_CHARS_PER_WORD = 100
"""A longer word is ``[UNK]`` (BERT's ``max_input_chars_per_word``)."""

_CJK_RANGES = (
  (0x4E00, 0x9FFF),
  (0x3400, 0x4DBF),
  (0x20000, 0x2A6DF),
  (0x2A700, 0x2B73F),
  (0x2B740, 0x2B81F),
  (0x2B820, 0x2CEAF),
  (0xF900, 0xFAFF),
  (0x2F800, 0x2FA1F),
)
_ASCII_PUNCTUATION = ((33, 47), (58, 64), (91, 96), (123, 126))


@dataclasses.dataclass(frozen=True, eq=False)
class WordPiece:
  """BERT's uncased WordPiece tokenizer over one vocabulary (module docstring: the rules).

  Attributes:
    vocab: token -> id (a plain dict, so the tokenizer pickles; never modified).
    cls_id, sep_id, mask_id, pad_id, unk_id: the ids of ``[CLS]``, ``[SEP]``, ``[MASK]``,
      ``[PAD]`` and ``[UNK]``.
    choice_ids: the id of every distinct token, in file order: what a uniformly random
      vocabulary token is drawn from (``random.choice(list(tokenizer.vocab.keys()))``).
  """

  vocab: Mapping[str, int]
  cls_id: int
  sep_id: int
  mask_id: int
  pad_id: int
  unk_id: int
  choice_ids: np.ndarray
  max_input_chars_per_word: int = MAX_INPUT_CHARS_PER_WORD

  @classmethod
  def from_tokens(cls, tokens: Sequence[str], source: str = "vocabulary") -> WordPiece:
    """The tokenizer whose token ``tokens[i]`` has id ``i`` (a repeated token takes its last
    id); ``ValueError`` naming ``source`` when it is empty or lacks a special token."""
    if not tokens:
      raise ValueError(f"{source}: empty; expected one WordPiece token per line")
    vocab = {token: i for i, token in enumerate(tokens)}
    missing = [token for token in SPECIAL_TOKENS if token not in vocab]
    if missing:
      raise ValueError(
        f"{source}: no {', '.join(missing)} line; expected a BERT vocabulary holding "
        f"{', '.join(SPECIAL_TOKENS)}"
      )
    return cls(
      vocab=vocab,
      cls_id=vocab["[CLS]"],
      sep_id=vocab["[SEP]"],
      mask_id=vocab["[MASK]"],
      pad_id=vocab["[PAD]"],
      unk_id=vocab["[UNK]"],
      choice_ids=np.fromiter(vocab.values(), dtype=np.int32, count=len(vocab)),
    )

  @classmethod
  def from_vocab_file(cls, path: str | os.PathLike) -> WordPiece:
    """The tokenizer of a BERT ``vocab.txt`` (local path or storage URL).

    Raises:
      FileNotFoundError: no such file.
      ValueError: the file is not UTF-8, is empty, or lacks one of ``[PAD]``, ``[UNK]``,
        ``[CLS]``, ``[SEP]``, ``[MASK]``.
    """
    return cls.from_tokens(read_vocab_lines(path), source=os.fspath(path))

  @property
  def vocab_size(self) -> int:
    """The number of distinct tokens."""
    return len(self.vocab)

  def words(self, text: str) -> list[str]:
    """The basic words of ``text`` (rules 1-6 of the module docstring)."""
    return basic_words(text)

  def pieces(self, word: str) -> list[str]:
    """The WordPiece pieces of one basic word (``[UNK]`` alone when it has none)."""
    return wordpiece_pieces(word, self.vocab, self.max_input_chars_per_word)

  def ids_of(self, pieces: Sequence[str]) -> np.ndarray:
    """The int32 ids of ``pieces``, each of which must be in the vocabulary."""
    return np.asarray([self.vocab[piece] for piece in pieces], dtype=np.int32)

  def word_ids(self, text: str) -> list[np.ndarray]:
    """The ids of each basic word's pieces: what :func:`augment_caption` takes."""
    return [self.ids_of(self.pieces(word)) for word in self.words(text)]

  def encode(self, text: str) -> np.ndarray:
    """The int32 ids of ``[CLS]``, every word's pieces in order, ``[SEP]``."""
    pieces = [piece for word in self.words(text) for piece in self.pieces(word)]
    ids = [self.cls_id, *(self.vocab[piece] for piece in pieces), self.sep_id]
    return np.asarray(ids, dtype=np.int32)


def read_vocab_lines(path: str | os.PathLike) -> list[str]:
  """The tokens of a vocabulary file, one a line (line ends ``\\n``, ``\\r\\n``, ``\\r``;
  a final line end ends the last token). ``FileNotFoundError``/``ValueError`` naming the
  file when it is missing or not UTF-8."""
  name = os.fspath(path)
  if not paths.isfile(name):
    raise FileNotFoundError(f"{name}: no such file; expected a BERT vocab.txt")
  with paths.open(name, "rb") as f:
    data = f.read()
  try:
    text = data.decode("utf-8")
  except UnicodeDecodeError as err:
    raise ValueError(
      f"{name}: not UTF-8 (byte {data[err.start]:#04x} at offset {err.start}); "
      "expected a BERT vocab.txt"
    ) from None
  lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
  if lines[-1] == "":
    lines.pop()  # the final line end
  return lines


def basic_words(text: str) -> list[str]:
  """BERT's basic (uncased) tokenization of ``text``: rules 1-6 of the module docstring."""
  spaced = "".join(_clean_char(char) for char in text)
  words = []
  for token in spaced.split():
    words.extend(split_punctuation(strip_accents(token.lower())))
  return " ".join(words).split()


def _clean_char(char: str) -> str:
  """Rules 1 and 2 for one character: ``""`` (removed), ``" "``, ``" c "`` or ``char``."""
  if char.isascii() and char.isalnum():
    return char
  if _is_removed(char):
    return ""
  if _is_whitespace(char):
    return " "
  if _is_cjk(ord(char)):
    return f" {char} "
  return char


@functools.lru_cache(maxsize=4096)
def _is_removed(char: str) -> bool:
  """NUL, U+FFFD and control characters (category ``C*``) other than tab, newline and CR."""
  if char in "\t\n\r":
    return False
  return char in "\x00\ufffd" or unicodedata.category(char).startswith("C")


@functools.lru_cache(maxsize=4096)
def _is_whitespace(char: str) -> bool:
  """Space, tab, newline, carriage return, and category ``Zs``."""
  return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _is_cjk(code: int) -> bool:
  """Whether ``code`` is in one of the CJK ideograph blocks of rule 2."""
  return any(low <= code <= high for low, high in _CJK_RANGES)


@functools.lru_cache(maxsize=4096)
def is_punctuation(char: str) -> bool:
  """BERT's punctuation: ASCII codes 33-47, 58-64, 91-96, 123-126, or category ``P*``."""
  code = ord(char)
  if any(low <= code <= high for low, high in _ASCII_PUNCTUATION):
    return True
  return unicodedata.category(char).startswith("P")


def strip_accents(token: str) -> str:
  """``token`` in NFD with its category ``Mn`` characters (combining accents) removed."""
  if token.isascii():
    return token
  decomposed = unicodedata.normalize("NFD", token)
  return "".join(char for char in decomposed if unicodedata.category(char) != "Mn")


def split_punctuation(token: str) -> list[str]:
  """``token`` cut so that every punctuation character is a token of its own."""
  out: list[str] = []
  current: list[str] = []
  for char in token:
    if is_punctuation(char):
      if current:
        out.append("".join(current))
        current = []
      out.append(char)
    else:
      current.append(char)
  if current:
    out.append("".join(current))
  return out


def wordpiece_pieces(word: str, vocab: Mapping[str, int], max_chars: int) -> list[str]:
  """Greedy longest-match-first pieces of ``word``, continuations prefixed ``##``;
  ``["[UNK]"]`` when the word has more than ``max_chars`` characters or a remainder
  matches no piece."""
  if len(word) > max_chars:
    return ["[UNK]"]
  pieces = []
  start = 0
  while start < len(word):
    piece = _longest_piece(word, start, vocab)
    if piece is None:
      return ["[UNK]"]
    pieces.append(piece)
    start += len(piece) - (2 if start > 0 else 0)
  return pieces


def _longest_piece(word: str, start: int, vocab: Mapping[str, int]) -> str | None:
  """The longest ``word[start:end]`` in ``vocab`` (as ``##...`` past the start), or None."""
  prefix = "##" if start > 0 else ""
  for end in range(len(word), start, -1):
    candidate = prefix + word[start:end]
    if candidate in vocab:
      return candidate
  return None
