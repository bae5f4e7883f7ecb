"""CVSE's official caption inputs: the concept labels and word ids its ``data.py`` gives an
evaluation caption (``PrecompDataset_Flickr30k.__getitem__``, transcribed in
tests/nltk_reference.py and run with nltk's own tokenizer and lemmatiser) equal jitr's
official labels (:func:`jitr.experiment.run_concepts.official_concept_data` with a WordNet)
and its ids of the ``"python3_bytes"`` caption form, on real Flickr8k captions with the
official F30K concept files and vocabulary. The default run takes every 8th image's
captions; ``-m full`` all 40,460."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jitr.data.caption_forms import PYTHON3_BYTES, caption_forms
from jitr.data.cvse_caption_labels import label_sentence, official_caption_labels
from jitr.data.official_vocab import read_official_vocab
from jitr.data.wordnet_nouns import read_noun_lemmatizer
from jitr.experiment.loaded_data import encode_captions
from jitr.experiment.run_concepts import official_concept_data
from jitr.relevance.captions_io import read_flickr8k_tokens
from tests.data_folders import data_folder, wordnet_folder
from tests.nltk_reference import nltk_data, official_item, official_name_concepts

# captions that take each path of the official code: the quotes str(bytes) chooses and
# escapes, non-ASCII bytes, a leading b, hyphens, 's, abbreviations, several sentences
CRAFTED = [
  "A man's dogs run on the grass .",
  'A sign reads "STOP" by two women',
  "The girl's \"new\" T-shirt ; Mr. Smith's cat.",
  "Boys in the café \\ near St. Mark's . Two children play",
  "baby",
  "People walking in the street, wearing sunglasses and hats.",
]


@pytest.fixture(scope="module")
def wordnet():
  return wordnet_folder()


@pytest.fixture(scope="module")
def reference(wordnet, tmp_path_factory):
  with nltk_data(tmp_path_factory.mktemp("nltk_data"), wordnet):
    yield


@pytest.fixture(scope="module")
def flickr8k():
  folder = data_folder("JITR_FLICKR8K", "flickr8k", "Flickr8k.token.txt", "Flickr8k text package")
  return read_flickr8k_tokens(str(folder / "Flickr8k.token.txt"))


@pytest.fixture(scope="module")
def f30k_vocab():
  folder = data_folder("JITR_OFFICIAL_DATA", "official", "vsepp_vocab", "official vocabularies")
  return read_official_vocab(folder / "vsepp_vocab" / "f30k_precomp_vocab.pkl")


def image_captions(flickr8k, stride: int) -> list[list[str]]:
  """The captions of every ``stride``-th image, image by image."""
  offsets = flickr8k.image_offsets
  return [
    list(flickr8k.captions[offsets[i] : offsets[i + 1]]) for i in range(0, len(offsets) - 1, stride)
  ]


@pytest.mark.parametrize("stride", [8, pytest.param(1, marks=pytest.mark.full)])
def test_labels_and_ids_are_the_official_ones(
  reference, wordnet, flickr8k, f30k_vocab, cvse_f30k, stride
):
  per_image = [*image_captions(flickr8k, stride), CRAFTED]
  captions = [c for caps in per_image for c in caps]
  assert len(captions) == {8: 5066, 1: 40466}[stride]
  categories = json.loads((cvse_f30k / "category_concepts.json").read_text())
  name_concepts = official_name_concepts(categories)
  word2idx = {w: i for i, w in enumerate(f30k_vocab.words)}
  want_ids, want_labels = zip(
    *(official_item(c.encode("utf-8"), word2idx, name_concepts, 300) for c in captions)
  )
  lemmatizer = read_noun_lemmatizer(wordnet)
  data, labels = official_concept_data(
    str(cvse_f30k), "f30k", per_image, [0], lemmatizer=lemmatizer
  )
  np.testing.assert_array_equal(labels, np.array(want_labels))
  sizes = [len(caps) for caps in per_image]
  starts = np.cumsum([0, *sizes[:-1]])
  union = [np.array(want_labels[s : s + n]).max(axis=0) for s, n in zip(starts, sizes)]
  np.testing.assert_array_equal(data.labels, union)  # an image's: its captions' union
  tokens, lengths = encode_captions(f30k_vocab, caption_forms(captions, PYTHON3_BYTES), 48)
  assert [row[:n].tolist() for row, n in zip(tokens, lengths)] == list(want_ids)
  # what the captions hold: hyphens, 's, abbreviations, quotes; all get b' and a final '
  lowered = [c.lower() for c in captions]
  assert sum("-" in c for c in lowered) == {8: 138, 1: 975}[stride]
  assert sum("'s" in c for c in lowered) == {8: 42, 1: 399}[stride]
  assert sum(" mr. " in c or " st. " in c for c in lowered) == {8: 2, 1: 5}[stride]
  # the ids of the caption itself differ in every caption (its first word at least)
  text_tokens, text_lengths = encode_captions(f30k_vocab, captions, 48)
  assert all(row[:n].tolist() != ids for row, n, ids in zip(text_tokens, text_lengths, want_ids))
  # jitr's own labels (stop words, plurals folded) differ from the official ones
  own = official_concept_data(str(cvse_f30k), "f30k", per_image, list(range(len(per_image))))[1]
  assert (own != labels).any(axis=1).sum() == {8: 2754, 1: 22023}[stride]


def test_the_sentence_and_the_first_concept_of_a_lemma(wordnet):
  assert label_sentence(" A dog .\t") == "'A dog .'"
  assert label_sentence("A man's dog") == '"A man\'s dog"'
  assert label_sentence('It\'s "new"') == "'It\\'s \"new\"'"
  assert label_sentence("baby") == "'baby'"  # lstrip('b') drops the b of b'...' alone
  assert label_sentence("café") == "'caf\\xc3\\xa9'"
  lemmatizer = read_noun_lemmatizer(wordnet)
  words = ["dog", "dogs", "men", "man", "has"]
  labels = official_caption_labels(["Two dogs and men .", "A man has a dog"], words, lemmatizer)
  # 'dogs' is lemmatised to 'dog', concept 0; 'men' is a WordNet lemma; 'has' -> 'ha'
  assert labels.tolist() == [[1, 0, 1, 0, 0], [1, 0, 0, 1, 1]]
