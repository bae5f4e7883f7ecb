"""The run settings of CVSE's official caption inputs: ``config.text.caption_form`` (the
Python 3 ``str(bytes)`` the official CVSE tokenises) and ``config.concepts.labels`` /
``config.concepts.wordnet`` (the official WordNet labels): their checks, what ``""``
resolves to in ``config.json``, what ``jitr-import`` sets for a CVSE checkpoint, and a
precomp run's ids and labels in each setting."""

from __future__ import annotations

import shutil

import ml_collections
import numpy as np
import pytest

from configs import default, paper
from jitr.experiment.loaded_data import load_data
from jitr.experiment.run_caption_form import with_official_caption_form
from jitr.experiment.run_concepts import resolved_labels
from jitr.experiment.run_config import check_train_config, resolved_config
from tests.data_folders import data_folder, wordnet_folder
from tests.file_fixtures import write_precomp

CAPTIONS = ("Two dogs run.", "A man's cat", "dogs' grass", "Men and women", "A red T-shirt .")


def changed(config, **fields) -> ml_collections.ConfigDict:
  """A copy of ``config`` with ``fields`` (``"group.name": value``) set."""
  config = config.copy_and_resolve_references()
  for path, value in fields.items():
    group, name = path.split(".")
    config[group][name] = value
  return config


def one_line(config) -> str:
  with pytest.raises(ValueError) as err:
    check_train_config(config)
  return str(err.value)


def test_bad_settings_are_one_line():
  config = paper.get_config("f30k,cvse,triplet")
  config.precomp_root = "data"
  assert one_line(changed(config, **{"text.caption_form": "bytes"})) == (
    "config.text.caption_form: expected one of '', 'text', 'python3_bytes' ('' is 'text' but "
    "for an imported official CVSE checkpoint), got 'bytes'"
  )
  assert one_line(
    changed(config, **{"text.caption_form": "python3_bytes", "text.tokenizer": "jitr"})
  ) == (
    "config.text.caption_form: 'python3_bytes' is the string the official CVSE code gives "
    "nltk's word_tokenize; it needs config.text.tokenizer 'nltk', not 'jitr'"
  )
  assert one_line(changed(config, **{"concepts.labels": "wordnet"})) == (
    "config.concepts.labels: expected one of '', 'jitr', 'official' ('' is 'official' with "
    "official concept files and a WordNet), got 'wordnet'"
  )
  assert one_line(changed(config, **{"concepts.labels": "official"})) == (
    "config.concepts.wordnet: the 'official' labels lemmatise with WordNet; give the folder "
    "of its index.noun and noun.exc (e.g. /usr/share/wordnet of Debian's wordnet-base)"
  )
  # the tokenizer resolved ("" without a vocabulary file: "jitr"): python3_bytes needs nltk's
  with pytest.raises(ValueError) as err:
    resolved_config(changed(config, **{"text.caption_form": "python3_bytes"}))
  assert str(err.value) == (
    "config.text.caption_form: 'python3_bytes' needs the 'nltk' tokenizer, but the run's is 'jitr'"
  )


def test_what_empty_settings_resolve_to(tmp_path):
  config = default.get_config()
  assert (config.text.caption_form, config.concepts.labels, config.concepts.wordnet) == ("",) * 3
  resolved = resolved_config(config)
  assert (resolved.text.caption_form, resolved.concepts.labels) == ("text", "jitr")
  official = tmp_path / "cvse"
  official.mkdir()
  (official / "f30k_adj_concepts.pkl").touch()
  config = changed(paper.get_config("f30k,cvse,triplet"), **{"concepts.source": str(official)})
  assert resolved_labels(config) == "jitr"  # no WordNet: jitr's own labels
  config.concepts.wordnet = "wordnet"
  assert resolved_labels(config) == "official"
  resolved = resolved_config(config)
  assert resolved.concepts.wordnet == str(tmp_path.cwd() / "wordnet")  # made absolute
  assert resolved_labels(changed(config, **{"concepts.source": ""})) == "jitr"
  assert resolved_labels(changed(config, **{"concepts.labels": "jitr"})) == "jitr"
  # jitr-import of an official CVSE checkpoint: its captions' str(bytes), unless told
  assert with_official_caption_form(config, "cvse").text.caption_form == "python3_bytes"
  assert with_official_caption_form(config, "sgr") is config
  text = changed(config, **{"text.caption_form": "text"})
  assert with_official_caption_form(text, "cvse").text.caption_form == "text"


@pytest.fixture
def run(tmp_path):
  """A tiny CVSE run on a precomp folder of :data:`CAPTIONS` with the official F30K concept
  files (their 300 words, label file indexed by the 6 images)."""
  official = data_folder("JITR_OFFICIAL_DATA", "official", "cvse_f30k", "official CVSE files")
  source = tmp_path / "concepts"
  shutil.copytree(official / "cvse_f30k", source)
  data = write_precomp(tmp_path / "data", n_images=2, n_eval=2)
  for split, n in (("train", 2), ("dev", 2), ("test", 2)):
    (data / f"{split}_caps.txt").write_text("\n".join(CAPTIONS * n) + "\n")
  config = paper.get_config("f30k,cvse,triplet")
  config.precomp_root = str(tmp_path / "data")
  config.data_dir = str(tmp_path / "cache")
  config.concepts.source = str(source)
  config.text.tokenizer = "nltk"
  config.vocab_min_count = 1
  return config


def test_a_run_reads_the_official_inputs(run):
  words = None

  def loaded(config):
    nonlocal words
    data = load_data(resolved_config(config), run.data_dir, teachers=False)
    words = data.concepts.words
    test = data.splits["test"]
    return test, [data.vocab.words[i] for i in np.asarray(test.tokens)[0, : test.lengths[0]]]

  test, first = loaded(run)
  assert first == ["<start>", "two", "dogs", "run", ".", "<end>"]
  jitr_labels = {words[c] for c in np.flatnonzero(test.caption_concept_labels[3])}
  official = changed(run, **{"text.caption_form": "python3_bytes"})
  official.concepts.wordnet = str(wordnet_folder())
  test, first = loaded(official)
  # the vocabulary built from the same form: the caption's first word is b'two
  assert first == ["<start>", "b'two", "dogs", "run", ".", "'", "<end>"]
  official_labels = {words[c] for c in np.flatnonzero(test.caption_concept_labels[3])}
  assert (jitr_labels, official_labels) == ({"man", "woman"}, {"men", "woman"})
  assert {words[c] for c in np.flatnonzero(test.caption_concept_labels[0])} == {"dog"}
  with pytest.raises(ValueError) as err:
    loaded(changed(official, **{"concepts.source": "", "concepts.labels": "official"}))
  assert str(err.value) == (
    "config.concepts.labels: 'official' labels captions with the words of CVSE's official "
    "concept files, but config.concepts.source (empty) holds none for f30k_precomp; give "
    "their folder or use 'jitr'"
  )
