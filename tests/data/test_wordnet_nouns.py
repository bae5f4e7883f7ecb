"""WordNet's noun lemmatiser (:mod:`jitr.data.wordnet_nouns`) equals nltk's own
``WordNetLemmatizer().lemmatize(word)`` on the same WordNet 3.0 (Debian's wordnet-base,
read by nltk from a data folder of copies: tests/nltk_reference.py), for every word CVSE's
official labels lemmatise in the Flickr8k captions and for the official F30K concept
names. The default run takes the words of every 8th caption (nltk's tokenizer takes about
0.15 ms a caption); ``-m full`` all 40,460."""

from __future__ import annotations

import json

import nltk
import pytest

from jitr.data.cvse_caption_labels import label_sentence
from jitr.data.nltk_tokens import nltk_tokens
from jitr.data.wordnet_nouns import (
  NOUN_RULES,
  noun_candidates,
  read_noun_exceptions,
  read_noun_lemmas,
  read_noun_lemmatizer,
)
from jitr.relevance.captions_io import read_flickr8k_tokens
from tests.data_folders import data_folder, wordnet_folder
from tests.nltk_reference import nltk_data


@pytest.fixture(scope="module")
def wordnet():
  return wordnet_folder()


@pytest.fixture(scope="module")
def nltk_lemmatizer(wordnet, tmp_path_factory):
  """nltk's own ``WordNetLemmatizer``, reading ``wordnet`` through its corpus reader."""
  with nltk_data(tmp_path_factory.mktemp("nltk_data"), wordnet):
    lemmatizer = nltk.stem.WordNetLemmatizer()
    lemmatizer.lemmatize("dogs")  # loads nltk's WordNet while the path holds it
    yield lemmatizer


@pytest.fixture(scope="module")
def ours(wordnet):
  return read_noun_lemmatizer(wordnet)


@pytest.fixture(scope="module")
def flickr8k() -> list[str]:
  folder = data_folder("JITR_FLICKR8K", "flickr8k", "Flickr8k.token.txt", "Flickr8k text package")
  return list(read_flickr8k_tokens(str(folder / "Flickr8k.token.txt")).captions)


def test_wordnet_3_0_nouns(ours, wordnet):
  assert len(ours.lemmas) == 117798  # WordNet 3.0's noun lemmas
  # noun.exc's 2,054 lines hold 2,050 forms (a later line of a form replaces the earlier)
  assert len(ours.exceptions) == 2050 and ours.exceptions["children"] == ("child",)
  assert {"dog", "men", "man", "t-shirt", "ha", "wa"} <= ours.lemmas
  assert len(NOUN_RULES) == 9
  lemmas = [ours.lemmatize(w) for w in ("dogs", "men", "women", "glasses", "t-shirt", "people")]
  assert lemmas == ["dog", "men", "woman", "glass", "t-shirt", "people"]
  # nltk's quirks, kept: an abbreviation wins over the word, an unknown word stays
  assert [ours.lemmatize(w) for w in ("has", "was", "us", "'s", ".")] == [
    "ha",
    "wa",
    "u",
    "'s",
    ".",
  ]
  assert noun_candidates("us", ours.lemmas, ours.exceptions) == ["us", "u"]
  assert noun_candidates("catss", ours.lemmas, ours.exceptions) == []  # the rules apply once


@pytest.mark.parametrize("stride", [8, pytest.param(1, marks=pytest.mark.full)])
def test_every_flickr8k_word_has_nltks_lemma(ours, nltk_lemmatizer, flickr8k, stride):
  captions = flickr8k[::stride]
  words = sorted({w for c in captions for w in nltk_tokens(label_sentence(c))})
  assert len(words) == {8: 3586, 1: 8918}[stride]
  theirs = [nltk_lemmatizer.lemmatize(w) for w in words]
  mine = [ours.lemmatize(w) for w in words]
  assert sum(a != b for a, b in zip(mine, theirs)) == 0
  assert sum(a != w for a, w in zip(mine, words)) == {8: 661, 1: 1569}[stride]


def test_the_official_concept_names_have_nltks_lemmas(ours, nltk_lemmatizer, cvse_f30k):
  names = list(json.loads((cvse_f30k / "category_concepts.json").read_text()))
  assert len(names) == 300
  mine = [ours.lemmatize(w) for w in names]
  assert mine == [nltk_lemmatizer.lemmatize(w) for w in names]
  # 36 names are not lemmas (plurals, 'has'); 22 of them share a lemma with an earlier one
  assert sum(a != w for a, w in zip(mine, names)) == 36 and len(set(mine)) == 278


def test_a_missing_or_malformed_file_is_one_line(tmp_path, wordnet):
  with pytest.raises(FileNotFoundError) as err:
    read_noun_lemmatizer(tmp_path)
  assert str(err.value) == (
    f"{tmp_path / 'index.noun'}: no such file; expected a WordNet 3.0 folder holding "
    "index.noun and noun.exc (nltk_data's corpora/wordnet or Debian's /usr/share/wordnet)"
  )
  index = tmp_path / "index.noun"
  index.write_text("  1 licence header\ndog n 7 5 @ ~ #m #p %p 7 1 02084071\ncat\n")
  with pytest.raises(ValueError) as err:
    read_noun_lemmas(index)
  assert str(err.value) == (
    f"{index}: line 3 is 'cat'; expected 'lemma n ...' (WordNet's noun index)"
  )
  exc = tmp_path / "noun.exc"
  exc.write_text("geese goose\n\nmice\n")
  with pytest.raises(ValueError, match=r"noun.exc: line 3 is 'mice'; expected 'form base \.\.\.'"):
    read_noun_exceptions(exc)
  exc.write_text("geese goose\nmice mouse\nmice rat\n")  # a later line replaces, as in nltk
  assert dict(read_noun_exceptions(exc)) == {"geese": ("goose",), "mice": ("rat",)}
