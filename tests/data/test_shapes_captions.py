"""Caption grammar: five distinct true captions, variety, facts serialisation."""

import re

import numpy as np
import pytest

from jitr.data import shapes_captions as C
from jitr.data import shapes_relevance as Rel
from jitr.data import shapes_scene as S


def _captions(i, seed=0):
  rng = S.example_rng(seed, 0, i)
  scene = S.sample_scene(rng)
  return scene, C.generate_captions(scene, rng)


def test_five_distinct_deterministic_captions():
  for i in range(30):
    scene, caps = _captions(i)
    assert len(caps) == C.CAPTIONS_PER_IMAGE
    assert len({t for t, _ in caps}) == 5
    assert caps == _captions(i)[1]
    assert all(re.fullmatch(r"[a-z ,:\-]+", t) for t, _ in caps)


def test_every_caption_is_true_of_its_scene():
  for i in range(200):
    scene, caps = _captions(i)
    for text, facts in caps:
      assert Rel.relevance(scene, facts) == 1.0, (text, facts)
      if facts.count >= 0:
        assert facts.count == len(scene.objects)
      for m in facts.mentions:  # each mention fits some object exactly
        assert any(Rel.attribute_match(m, o) == 1.0 for o in scene.objects)


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
  scene = S.Scene((S.SceneObject(0, 0, 0, 0, 0), S.SceneObject(1, 2, 1, 2, 2)), seed=0)
  rng = np.random.default_rng(0)
  rels = set()
  for _ in range(40):
    out = C._caption_relation(scene, rng)
    text, facts = out
    a, rel, b = facts.relation
    rels.add(rel)
    oa = next(o for o in scene.objects if Rel.attribute_match(facts.mentions[a], o) == 1)
    ob = next(o for o in scene.objects if o is not oa)
    assert Rel.relation_holds(rel, oa, ob), text
  assert rels == {C.LEFT_OF, C.RIGHT_OF, C.ABOVE, C.BELOW}
  single = S.Scene((S.SceneObject(0, 0, 0, 0, 0),))
  assert C._caption_relation(single, rng) is None


def test_facts_round_trip_array_and_json():
  facts = C.CaptionFacts(
    mentions=(C.Mention(shape=0, colour=1), C.Mention(size=1, row=2)),
    count=2,
    relation=(1, C.ABOVE, 0),
  )
  arr = facts.to_array()
  assert arr.shape == (C.FACT_FIELDS,) and arr.dtype == np.int32
  np.testing.assert_array_equal(arr[:10], [0, 1, -1, -1, -1, -1, -1, 1, 2, -1])
  np.testing.assert_array_equal(arr[15:], [2, 2, 1, C.ABOVE, 0])
  assert C.CaptionFacts.from_array(arr) == facts
  assert C.CaptionFacts.from_json(facts.to_json()) == facts
  assert '"relation": [1, "above", 0]' in facts.to_json()
  for i in range(50):
    for _, f in _captions(i)[1]:
      assert C.CaptionFacts.from_array(f.to_array()) == f
      assert C.CaptionFacts.from_json(f.to_json()) == f


def test_bad_facts_are_rejected():
  with pytest.raises(ValueError, match="relation"):
    C.CaptionFacts(mentions=(C.Mention(shape=0),), relation=(0, 0, 1))
  with pytest.raises(ValueError, match="mention or a count"):
    C.CaptionFacts()
  with pytest.raises(ValueError, match="expected shape"):
    C.CaptionFacts.from_array(np.zeros(3, np.int32))
