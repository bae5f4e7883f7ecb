"""PTB-style caption tokenization, matching pycocoevalcap's ``PTBTokenizer``.

pycocoevalcap runs Stanford CoreNLP 3.4.1's ``PTBTokenizer -preserveLines
-lowerCase`` (Java) and then drops the tokens in :data:`PUNCTUATIONS`. This
module is a pure-Python re-implementation of the rules that matter for image
captions, so CIDEr-D can be computed without Java:

* the text is split on whitespace, then each chunk is lexed left to right;
* clitics are split off: ``dog's -> dog 's``, ``isn't -> is n't``,
  ``can't -> ca n't``, ``won't -> wo n't``, ``I'm -> i 'm`` ('s 'm 'd 're 've 'll);
* numbers keep their inner ``. , : /`` (``5:30``, ``1,000``, ``3.5``);
* words keep inner hyphens, periods, slashes (``t-shirt``, ``man/woman``);
  ``&`` is its own token (``at&t -> at & t``), ``cannot -> can not``;
* abbreviations keep their final period (``mr.``, ``u.s.``, ``p.m.``, single
  letters ``u.``); ``o'clock`` stays one word;
* brackets become ``-lrb- -rrb- -lsb- -rsb- -lcb- -rcb-`` after lower-casing.
  pycocoevalcap's punctuation list holds the *upper-case* ``-LRB-``, so these
  tokens survive its filter; we reproduce that quirk;
* double quotes become `````` / ``''``; other symbols (``# = % + $``) are single
  tokens; everything is lower-cased.

Parity with the Java tokenizer is tested on every Flickr8k caption
(``tests/relevance/test_tokenize.py``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

# The tokens pycocoevalcap removes after tokenization (ptbtokenizer.py).
PUNCTUATIONS: frozenset[str] = frozenset(
  [
    "''",
    "'",
    "``",
    "`",
    "-LRB-",
    "-RRB-",
    "-LCB-",
    "-RCB-",
    ".",
    "?",
    "!",
    ",",
    ":",
    "-",
    "--",
    "...",
    ";",
  ]
)

_BRACKETS = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-", "}": "-RCB-"}

# Title / month / state abbreviations that keep their period (subset of CoreNLP's lists).
_ABBREVIATIONS = frozenset(
  """mr mrs ms dr prof st jr sr mt ft ave blvd rd co corp inc ltd bros vs etc jan feb mar apr
    jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun gen col sgt capt
    lt rep sen gov rev hon messrs mme mlle no vol dept univ assn est fig jr""".split()
)

_ALNUM = r"[^\W_]"  # a letter or digit, unicode-aware

# Clitics are split off before lexing (Penn Treebank conventions).
_CLITIC_RES = [
  (re.compile(rf"(?i)({_ALNUM})(n't)(?!{_ALNUM})"), r"\1 \2"),
  (re.compile(rf"(?i)({_ALNUM})('(?:s|m|d|re|ve|ll))(?!{_ALNUM})"), r"\1 \2"),
  (re.compile(r"(?i)^('t)(is|was)$"), r"\1 \2"),
  (re.compile(rf"(?i)({_ALNUM})('n')({_ALNUM})"), r"\1 \2 \3"),
]

_TOKEN_RE = re.compile(
  "|".join(
    [
      r"(?P<clitic>n't|'(?:s|m|d|re|ve|ll|t|n'))(?![^\W_])",
      r"(?P<number>\d+(?:[.,:/]\d+)+)(?![^\W_])",
      rf"(?P<oword>[od]'{_ALNUM}+)",
      rf"(?P<acronym>(?:{_ALNUM}\.){{2,}})",
      rf"(?P<word>{_ALNUM}+(?:[-./_]{_ALNUM}+)*)",
      r"(?P<handle>@\w+)",
      r"(?P<sgml></?[A-Za-z][^<>\s]*>)",
      r"(?P<ellipsis>\.\.\.+)",
      r"(?P<dashes>--+)",
      r"(?P<dquote>\")",
      r"(?P<quote2>''|``)",
      r"(?P<bracket>[()\[\]{}])",
      r"(?P<other>\S)",
    ]
  ),
  re.IGNORECASE,
)

_FAST_WORD = re.compile(rf"{_ALNUM}+(?:-{_ALNUM}+)*\Z")


def _lex_piece(piece: str) -> list[str]:
  """Tokens of one whitespace-free piece whose clitics are already split off."""
  tokens: list[str] = []
  pos = 0
  n = len(piece)
  while pos < n:
    m = _TOKEN_RE.match(piece, pos)
    assert m is not None  # the `other` alternative matches any character
    kind = m.lastgroup
    text = m.group(kind)
    end = m.end()
    if kind == "word":
      # a trailing period is kept on abbreviations (mr.) and split off otherwise
      abbreviation = text.lower() in _ABBREVIATIONS or (len(text) == 1 and text.isalpha())
      if end < n and piece[end] == "." and abbreviation:
        text += "."
        end += 1
    elif kind == "dquote":
      # an opening quote is attached to what follows it; a lone quote closes
      opening = (pos == 0 or piece[pos - 1] in "([{<") and end < n
      text = "``" if opening else "''"
    elif kind == "bracket":
      text = _BRACKETS[text]
    elif kind == "other" and text == "'" and pos == 0 and end < n and piece[end].isalnum():
      text = "`"  # an opening single quote is written as a backtick
    tokens.append(text)
    pos = end
  return tokens


def _lex_chunk(chunk: str) -> list[str]:
  """Tokens of one whitespace-free chunk (before lower-casing)."""
  if chunk.lower() == "cannot":
    return [chunk[:3], chunk[3:]]
  if _FAST_WORD.match(chunk):
    return [chunk]
  for pattern, repl in _CLITIC_RES:
    chunk = pattern.sub(repl, chunk)
  out: list[str] = []
  for piece in chunk.split():
    out.extend(_lex_piece(piece))
  return out


@functools.lru_cache(maxsize=1 << 18)
def ptb_tokenize_raw(caption: str) -> tuple[str, ...]:
  """All PTB tokens of ``caption``, lower-cased, punctuation kept."""
  chunks = caption.replace("\n", " ").split()
  out: list[str] = []
  for chunk in chunks:
    out.extend(t.lower() for t in _lex_chunk(chunk))
  return tuple(out)


def ptb_tokenize(caption: str) -> str:
  """pycocoevalcap's tokenized form of ``caption``: PTB tokens joined by spaces, punctuation
  removed.

  >>> ptb_tokenize("A dog's ball, isn't it?")
  "a dog 's ball is n't it"
  """
  return " ".join(t for t in ptb_tokenize_raw(caption) if t not in PUNCTUATIONS)


def ptb_tokenize_all(captions: Iterable[str]) -> list[str]:
  """:func:`ptb_tokenize` over a sequence of captions."""
  return [ptb_tokenize(c) for c in captions]


def tokenize_reference_sets(reference_sets: Sequence[Sequence[str]]) -> list[list[str]]:
  """:func:`ptb_tokenize` over a list of reference lists."""
  return [[ptb_tokenize(c) for c in refs] for refs in reference_sets]
