import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses
from tests.losses import numpy_reference as ref
from tests.losses.conftest import make_batch

SIM3 = np.array([[0.8, 0.5, 0.7], [0.3, 0.6, 0.1], [0.2, 0.9, 0.4]], np.float32)


def test_two_by_two_by_hand():
  sim = jnp.array([[0.9, 0.8], [0.1, 0.5]])
  # i2t: [.2+.8-.9]+ = .1, [.2+.1-.5]+ = 0; t2i: [.2+.1-.9]+ = 0, [.2+.8-.5]+ = .5
  assert float(losses.triplet(sim, reduction="sum")) == pytest.approx(0.6, abs=1e-6)
  assert float(losses.triplet(sim, mining="sum", reduction="sum")) == pytest.approx(0.6, abs=1e-6)
  assert float(losses.triplet(sim)) == pytest.approx(0.3, abs=1e-6)


@pytest.mark.parametrize(
  "mining, expected_sum, expected_mean",
  [
    ("max", 1.8, 0.6),  # rows .1, 0, .7; columns 0, .5, .5
    ("sum", 1.9, (0.8 + 1.1) / 3),  # rows .1, 0, .7; columns 0, .1+.5, .5
  ],
)
def test_three_by_three_by_hand(mining, expected_sum, expected_mean):
  sim = jnp.asarray(SIM3)
  assert float(losses.triplet(sim, mining=mining, reduction="sum")) == pytest.approx(
    expected_sum, abs=1e-6
  )
  assert float(losses.triplet(sim, mining=mining)) == pytest.approx(expected_mean, abs=1e-6)


def test_per_query_values_by_hand():
  out = losses.triplet(jnp.asarray(SIM3), reduction="none")
  np.testing.assert_allclose(out.image_to_text, [0.1, 0.0, 0.7], atol=1e-6)
  np.testing.assert_allclose(out.text_to_image, [0.0, 0.5, 0.5], atol=1e-6)
  np.testing.assert_array_equal(out.image_weight, [1, 1, 1])


@pytest.mark.parametrize("mining", ["max", "sum"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_numpy_with_several_positives_and_padding(mining, reduction, seed):
  sim, pos, where, _, _ = make_batch(seed, n_img=5, captions_per_image=3, pad_img=2, pad_txt=3)
  got = losses.triplet(
    jnp.asarray(sim), positives=pos, where=where, mining=mining, reduction=reduction
  )
  want = ref.triplet(sim, pos, where, mining=mining, reduction=reduction)
  assert float(got) == pytest.approx(want, rel=1e-5, abs=1e-6)


def test_sum_of_hinges_with_ties_matches_numpy():
  # Ties between negatives and at the hinge boundary exercise the sorted-prefix trick.
  sim = np.array([[0.5, 0.3, 0.3, 0.3, 0.5], [0.3, 0.5, 0.3, 0.1, 0.3]], np.float32)
  pos = np.zeros_like(sim, bool)
  pos[0, 0] = pos[1, 1] = pos[1, 4] = True
  where = np.ones_like(pos)
  got = losses.triplet(jnp.asarray(sim), positives=pos, mining="sum", reduction="sum")
  assert float(got) == pytest.approx(
    ref.triplet(sim, pos, where, mining="sum", reduction="sum"), abs=1e-6
  )


def test_bad_inputs_raise_clear_errors():
  with pytest.raises(ValueError, match="positives: required"):
    losses.triplet(jnp.zeros((2, 3)))
  with pytest.raises(ValueError, match="mining"):
    losses.triplet(jnp.zeros((2, 2)), mining="hardest")
  with pytest.raises(ValueError, match="reduction"):
    losses.triplet(jnp.zeros((2, 2)), reduction="avg")
