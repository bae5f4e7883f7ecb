"""Exact relevance: hand-checked scenes, vectorised == reference, own captions = 1."""

import numpy as np
import pytest

from jitr.data.shapes import captions as shapes_captions
from jitr.data.shapes import relevance as shapes_relevance
from jitr.data.shapes import scene as shapes_scene

CIRCLE, SQUARE, TRIANGLE = 0, 1, 2
RED, GREEN, BLUE = 0, 1, 2
SMALL, LARGE = 0, 1
M = shapes_captions.Mention

# A large red circle top-left and a small blue square bottom-right.
SCENE = shapes_scene.Scene(
  (
    shapes_scene.SceneObject(CIRCLE, RED, LARGE, 0, 0),
    shapes_scene.SceneObject(SQUARE, BLUE, SMALL, 2, 2),
  ),
  seed=0,
)

HAND_CASES = [
  # (facts, expected relevance, why)
  (shapes_captions.CaptionFacts((M(shape=CIRCLE, colour=RED),)), 1.0, "a red circle"),
  (
    shapes_captions.CaptionFacts((M(shape=CIRCLE, colour=BLUE),)),
    0.5,
    "best object matches 1 of 2",
  ),
  (
    shapes_captions.CaptionFacts((M(shape=TRIANGLE, colour=GREEN, size=LARGE),)),
    1 / 3,
    "only the size of the circle matches",
  ),
  (
    shapes_captions.CaptionFacts((M(shape=CIRCLE, colour=RED), M(shape=CIRCLE, colour=RED))),
    0.5,
    "two red circles: the second must use the square (0)",
  ),
  (
    shapes_captions.CaptionFacts(
      (M(shape=CIRCLE, colour=RED), M(shape=SQUARE, colour=BLUE)),
      relation=(0, shapes_captions.ABOVE, 1),
    ),
    1.0,
    "red circle above blue square",
  ),
  (
    shapes_captions.CaptionFacts(
      (M(shape=CIRCLE, colour=RED), M(shape=SQUARE, colour=BLUE)),
      relation=(0, shapes_captions.BELOW, 1),
    ),
    2 / 3,
    "relation false",
  ),
  (
    shapes_captions.CaptionFacts(
      (M(shape=SQUARE, colour=BLUE), M(shape=CIRCLE, colour=RED)),
      relation=(0, shapes_captions.LEFT_OF, 1),
    ),
    2 / 3,
    "swapping the assignment would make the relation true but scores 1 < 2",
  ),
  (shapes_captions.CaptionFacts(count=2), 1.0, "two shapes"),
  (shapes_captions.CaptionFacts(count=3), 0.5, "three shapes: off by one"),
  (shapes_captions.CaptionFacts(count=1), 0.5, "one shape: off by one"),
  (shapes_captions.CaptionFacts((M(colour=RED),), count=3), 0.75, "(1 + 0.5) / 2"),
  (
    shapes_captions.CaptionFacts((M(colour=RED), M(colour=BLUE), M(colour=GREEN))),
    2 / 3,
    "third mention has no object left",
  ),
  (
    shapes_captions.CaptionFacts((M(shape=CIRCLE, row=0, col=2),)),
    2 / 3,
    "circle in the top right: shape and row match",
  ),
  (shapes_captions.CaptionFacts((M(size=SMALL, row=2),)), 1.0, "something small at the bottom"),
  (shapes_captions.CaptionFacts((M(),)), 1.0, "a mention stating nothing matches any object"),
  (
    shapes_captions.CaptionFacts((M(shape=TRIANGLE, colour=GREEN),), count=1),
    0.25,
    "(0 + 0.5) / 2",
  ),
]


@pytest.mark.parametrize("facts,expected,why", HAND_CASES, ids=[c[2] for c in HAND_CASES])
def test_hand_checked_relevance(facts, expected, why):
  assert shapes_relevance.relevance(SCENE, facts) == pytest.approx(expected), why
  mat = shapes_relevance.relevance_matrix(SCENE.to_array()[None], facts.to_array()[None])
  assert mat.shape == (1, 1) and mat.dtype == np.float32
  assert mat[0, 0] == pytest.approx(expected, abs=1e-6), why


def _random_facts(rng):
  """Arbitrary (not necessarily true) facts, to cover cases captions never make."""
  n = int(rng.integers(0, 4))
  mentions = tuple(
    M(
      *(
        int(rng.integers(c)) if rng.random() < 0.5 else -1
        for c in shapes_scene.ATTRIBUTE_CARDINALITY
      )
    )
    for _ in range(n)
  )
  relation = None
  if n >= 2 and rng.random() < 0.5:
    a, b = rng.choice(n, 2, replace=False)
    relation = (int(a), int(rng.integers(4)), int(b))
  count = int(rng.integers(1, 4)) if (n == 0 or rng.random() < 0.3) else -1
  return shapes_captions.CaptionFacts(mentions, count, relation)


def test_vectorised_matrix_equals_reference():
  rng = np.random.default_rng(0)
  scenes = [shapes_scene.sample_scene(shapes_scene.example_rng(1, 0, i)) for i in range(40)]
  facts = [_random_facts(rng) for _ in range(60)]
  for i in range(20):
    facts += [
      f for _, f in shapes_captions.generate_captions(scenes[i], shapes_scene.example_rng(1, 0, i))
    ]
  mat = shapes_relevance.relevance_matrix(
    shapes_scene.stack_scenes(scenes), shapes_captions.stack_facts(facts), chunk_size=7
  )
  ref = np.array([[shapes_relevance.relevance(s, f) for f in facts] for s in scenes])
  np.testing.assert_allclose(mat, ref, atol=1e-6)
  assert mat.min() >= 0 and mat.max() <= 1
  assert 0.05 < (ref == 1).mean() < 0.5 and (ref == 0).mean() < 0.5  # graded


def test_own_captions_score_one_in_matrix():
  scenes, facts = [], []
  for i in range(30):
    rng = shapes_scene.example_rng(2, 0, i)
    scene = shapes_scene.sample_scene(rng)
    scenes.append(scene)
    facts += [f for _, f in shapes_captions.generate_captions(scene, rng)]
  mat = shapes_relevance.relevance_matrix(
    shapes_scene.stack_scenes(scenes), shapes_captions.stack_facts(facts)
  )
  assert mat.shape == (30, 150)
  np.testing.assert_array_equal(mat[np.repeat(np.arange(30), 5), np.arange(150)], 1.0)


def test_bad_shapes_raise():
  with pytest.raises(ValueError, match=r"scenes: expected shape \[N, 3, 7\]"):
    shapes_relevance.relevance_matrix(
      np.zeros((2, 3, 5)), np.zeros((1, shapes_captions.FACT_FIELDS))
    )
  with pytest.raises(ValueError, match=r"facts: expected shape \[C, 20\]"):
    shapes_relevance.relevance_matrix(np.zeros((2, 3, 7)), np.zeros((1, 19)))
