import math

import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses
from tests.losses import numpy_reference as ref
from tests.losses.conftest import make_batch


def test_rank_adaptive_margins_by_hand():
  scores = jnp.array([0.9, 0.1, 0.5, 0.3, 0.7])
  negatives = jnp.array([False, True, True, True, True])
  # Negatives in descending order .7, .5, .3, .1 hold ranks 2..5 of n = 5:
  # m = 3/4 − (rank − 2)/6.
  np.testing.assert_allclose(
    losses.rank_adaptive_margins(scores, negatives),
    [0.0, 0.25, 0.75 - 1 / 6, 0.75 - 2 / 6, 0.75],
    atol=1e-6,
  )


def test_two_by_two_by_hand():
  sim = jnp.array([[0.5, 0.0], [0.0, 0.5]])
  expected = math.log(1 + math.exp((0.0 - 0.5 + 0.75) / 0.5))
  assert float(losses.adaptive_listwise(sim)) == pytest.approx(expected, abs=1e-6)


def test_three_by_three_by_hand_with_direction_weights():
  sim = jnp.array([[0.6, 0.2, 0.4], [0.1, 0.5, 0.3], [0.0, 0.2, 0.7]])
  beta = 0.5

  def row(pos, hard, easy):  # hardest negative gets margin 3/4, the other 1/4
    return math.log(1 + math.exp((hard - pos + 0.75) / beta) + math.exp((easy - pos + 0.25) / beta))

  i2t = [row(0.6, 0.4, 0.2), row(0.5, 0.3, 0.1), row(0.7, 0.2, 0.0)]
  t2i = [row(0.6, 0.1, 0.0), row(0.5, 0.2, 0.2), row(0.7, 0.4, 0.3)]
  expected = 0.4 * np.mean(i2t) + 0.6 * np.mean(t2i)
  assert float(losses.adaptive_listwise(sim)) == pytest.approx(expected, abs=1e-6)
  out = losses.adaptive_listwise(sim, reduction="none")
  np.testing.assert_allclose(out.image_to_text, i2t, atol=1e-6)
  np.testing.assert_allclose(out.text_to_image, t2i, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_numpy_with_several_positives_and_padding(seed):
  sim, pos, where, _, _ = make_batch(seed, n_img=5, captions_per_image=2, pad_img=1, pad_txt=2)
  got = losses.adaptive_listwise(
    jnp.asarray(sim), positives=pos, where=where, sharpness=0.5, alpha=0.4
  )
  assert float(got) == pytest.approx(ref.adaptive_listwise(sim, pos, where, 0.5, 0.4), rel=1e-5)


def test_large_scores_stay_finite():
  sim = jnp.array([[300.0, -300.0], [-300.0, 300.0]])
  assert np.isfinite(float(losses.adaptive_listwise(sim, sharpness=1e-3)))
