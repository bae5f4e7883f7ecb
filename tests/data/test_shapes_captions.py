"""Caption grammar: five distinct true captions, variety, facts serialisation."""

import re

import numpy as np
import pytest

from jitr.data.shapes import captions as shapes_captions
from jitr.data.shapes import relevance as shapes_relevance
from jitr.data.shapes import scene as shapes_scene


def _captions(i, seed=0):
  rng = shapes_scene.example_rng(seed, 0, i)
  scene = shapes_scene.sample_scene(rng)
  return scene, shapes_captions.generate_captions(scene, rng)


def test_five_distinct_deterministic_captions():
  for i in range(30):
    scene, caps = _captions(i)
    assert len(caps) == shapes_captions.CAPTIONS_PER_IMAGE
    assert len({t for t, _ in caps}) == 5
    assert caps == _captions(i)[1]
    assert all(re.fullmatch(r"[a-z ,:\-]+", t) for t, _ in caps)


def test_every_caption_is_true_of_its_scene():
  for i in range(200):
    scene, caps = _captions(i)
    for text, facts in caps:
      assert shapes_relevance.relevance(scene, facts) == 1.0, (text, facts)
      if facts.count >= 0:
        assert facts.count == len(scene.objects)
      for m in facts.mentions:  # each mention fits some object exactly
        assert any(shapes_relevance.attribute_match(m, o) == 1.0 for o in scene.objects)


def test_grammar_has_variety():
  texts, kinds = [], set()
  for i in range(300):
    _, caps = _captions(i)
    for text, f in caps:
      texts.append(text)
      kinds.add(
        ("relation" if f.relation else "")
        + ("count" if f.count >= 0 else "")
        + f"m{len(f.mentions)}"
      )
      if f.relation is None and any(m.row >= 0 or m.col >= 0 for m in f.mentions):
        kinds.add("position")
  words = set(" ".join(texts).split())
  # synonyms of circle, red, large; relations; counts
  assert {"circle", "ball", "disc"} <= words
  assert {"red", "crimson", "scarlet"} <= words
  assert {"large", "big", "huge", "small", "tiny"} <= words
  assert {"above", "below", "left", "right"} <= words
  assert {"two", "three"} <= words
  assert {
    "m1",
    "m2",
    "m3",
    "relationm2",
    "countm0",
    "countm1",
    "countm2",
    "countm3",
    "position",
  } <= kinds
  assert len(set(texts)) > 0.95 * len(texts)
  # word order: the position phrase sometimes opens the caption
  assert any(t.startswith(("at the", "in the", "on the")) for t in texts)


def test_relation_facts_hold_on_grid():
  scene = shapes_scene.Scene(
    (shapes_scene.SceneObject(0, 0, 0, 0, 0), shapes_scene.SceneObject(1, 2, 1, 2, 2)), seed=0
  )
  rng = np.random.default_rng(0)
  rels = set()
  for _ in range(40):
    out = shapes_captions._caption_relation(scene, rng)
    text, facts = out
    a, rel, b = facts.relation
    rels.add(rel)
    oa = next(
      o for o in scene.objects if shapes_relevance.attribute_match(facts.mentions[a], o) == 1
    )
    ob = next(o for o in scene.objects if o is not oa)
    assert shapes_relevance.relation_holds(rel, oa, ob), text
  assert rels == {
    shapes_captions.LEFT_OF,
    shapes_captions.RIGHT_OF,
    shapes_captions.ABOVE,
    shapes_captions.BELOW,
  }
  single = shapes_scene.Scene((shapes_scene.SceneObject(0, 0, 0, 0, 0),))
  assert shapes_captions._caption_relation(single, rng) is None


def test_facts_round_trip_array_and_json():
  facts = shapes_captions.CaptionFacts(
    mentions=(shapes_captions.Mention(shape=0, colour=1), shapes_captions.Mention(size=1, row=2)),
    count=2,
    relation=(1, shapes_captions.ABOVE, 0),
  )
  arr = facts.to_array()
  assert arr.shape == (shapes_captions.FACT_FIELDS,) and arr.dtype == np.int32
  np.testing.assert_array_equal(arr[:10], [0, 1, -1, -1, -1, -1, -1, 1, 2, -1])
  np.testing.assert_array_equal(arr[15:], [2, 2, 1, shapes_captions.ABOVE, 0])
  assert shapes_captions.CaptionFacts.from_array(arr) == facts
  assert shapes_captions.CaptionFacts.from_json(facts.to_json()) == facts
  assert '"relation": [1, "above", 0]' in facts.to_json()
  for i in range(50):
    for _, f in _captions(i)[1]:
      assert shapes_captions.CaptionFacts.from_array(f.to_array()) == f
      assert shapes_captions.CaptionFacts.from_json(f.to_json()) == f


def test_bad_facts_are_rejected():
  with pytest.raises(ValueError, match="relation"):
    shapes_captions.CaptionFacts(mentions=(shapes_captions.Mention(shape=0),), relation=(0, 0, 1))
  with pytest.raises(ValueError, match="mention or a count"):
    shapes_captions.CaptionFacts()
  with pytest.raises(ValueError, match="expected shape"):
    shapes_captions.CaptionFacts.from_array(np.zeros(3, np.int32))
