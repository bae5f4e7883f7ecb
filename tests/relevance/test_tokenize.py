"""PTB tokenization: hand cases and parity with pycocoevalcap's Java PTBTokenizer."""

from __future__ import annotations

import pytest

from jitr.relevance.tokenize import ptb_tokenize, ptb_tokenize_raw


@pytest.mark.parametrize(
  "text, expected",
  [
    ("The dog's ball isn't red, it's blue!", "the dog 's ball is n't red it 's blue"),
    ('He said "hello" (twice) -- then left... ok?', "he said hello -lrb- twice -rrb- then left ok"),
    (
      "A man/woman * star & co. at 5:30 p.m. in the U.S.",
      "a man/woman * star & co. at 5:30 p.m. in the u.s.",
    ),
    ("Mr. Smith's cat; $5.00 costs 1,000 dollars", "mr. smith 's cat $ 5.00 costs 1,000 dollars"),
    ("Don't can't won't I'm cannot", "do n't ca n't wo n't i 'm can not"),
    ("an at&t headphone , a five o'clock shadow", "an at & t headphone a five o'clock shadow"),
    ('the letter " P. " on a U. Miami shirt', "the letter p. on a u. miami shirt"),
    ("e-mail #1 =2 50% a+b", "e-mail # 1 = 2 50 % a + b"),
    ("   ", ""),
  ],
)
def test_hand_cases(text, expected):
  assert ptb_tokenize(text) == expected


def test_raw_keeps_punctuation_and_quote_forms():
  assert ptb_tokenize_raw('a " sale " sign .') == ("a", "''", "sale", "''", "sign", ".")
  assert ptb_tokenize_raw('said "hi" .') == ("said", "``", "hi", "''", ".")


def test_equals_java_ptbtokenizer_on_every_flickr8k_caption(flickr8k_captions, java):
  from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

  caps = flickr8k_captions.captions
  ref = PTBTokenizer().tokenize({i: [{"caption": c}] for i, c in enumerate(caps)})
  mismatches = [
    (c, ref[i][0], ptb_tokenize(c)) for i, c in enumerate(caps) if ptb_tokenize(c) != ref[i][0]
  ]
  assert len(caps) == 40460
  assert mismatches == []
