import jax.numpy as jnp
import pytest

from jitr import losses
from tests.losses import numpy_reference as ref
from tests.losses.conftest import make_batch


def test_two_by_two_by_hand():
  sim = jnp.array([[0.5, 0.4], [0.0, 0.5]])
  semantic = jnp.array([[1.0, 0.8], [0.8, 1.0]])
  # Row 0 and column 1: [.185 + .4 + .025·.8 − .5]+ = .105; the others are negative.
  assert float(losses.semantic_hard_negatives(sim, semantic, reduction="sum")) == pytest.approx(
    0.21, abs=1e-6
  )


def test_semantic_similarity_can_change_which_negative_is_hardest():
  sim = jnp.array([[0.5, 0.30, 0.32], [0.0, 0.5, 0.0], [0.0, 0.0, 0.5]])
  semantic = jnp.array([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
  out = losses.semantic_hard_negatives(sim, semantic, semantic_weight=0.1, reduction="none")
  # 0.30 + 0.1·1.0 = 0.40 beats 0.32: [.185 + .40 − .5]+ = .085
  assert float(out.image_to_text[0]) == pytest.approx(0.085, abs=1e-6)


def test_zero_weight_is_the_plain_triplet():
  sim, pos, where, _, metric = make_batch(1, n_img=4, captions_per_image=2)
  got = losses.semantic_hard_negatives(
    jnp.asarray(sim), jnp.asarray(metric), positives=pos, semantic_weight=0.0
  )
  assert float(got) == pytest.approx(
    float(losses.triplet(jnp.asarray(sim), positives=pos, margin=0.185)), abs=1e-6
  )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_numpy_with_several_positives_and_padding(seed):
  sim, pos, where, relevance, _ = make_batch(
    seed, n_img=5, captions_per_image=2, pad_img=1, pad_txt=2
  )
  got = losses.semantic_hard_negatives(
    jnp.asarray(sim), jnp.asarray(relevance), positives=pos, where=where
  )
  assert float(got) == pytest.approx(
    ref.semantic_hard_negatives(sim, relevance, pos, where), rel=1e-5
  )
