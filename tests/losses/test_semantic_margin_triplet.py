import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses
from jitr.losses.semantic_margin_triplet import choose_negative
from tests.losses import numpy_reference as ref
from tests.losses.conftest import make_batch

SIM = jnp.array([[0.5, 0.4], [0.1, 0.6]])
METRIC = jnp.array([[2.0, 0.5], [1.0, 3.0]])


def test_two_by_two_by_hand():
  # i2t: α = (2 − .5)/5 = .3 → [.3 + .4 − .5]+ = .2;  α = (3 − 1)/5 = .4 → [.4 + .1 − .6]+ = 0
  # t2i (metric transposed): α = (2 − 1)/5 = .2 → [.2 + .1 − .5]+ = 0;
  #   α = (3 − .5)/5 = .5 → [.5 + .4 − .6]+ = .3
  out = losses.semantic_margin_triplet(SIM, METRIC, temperature=5.0, reduction="none")
  np.testing.assert_allclose(out.image_to_text, [0.2, 0.0], atol=1e-6)
  np.testing.assert_allclose(out.text_to_image, [0.0, 0.3], atol=1e-6)
  assert float(losses.semantic_margin_triplet(SIM, METRIC, temperature=5.0)) == pytest.approx(
    0.25, abs=1e-6
  )


def test_max_margin_clips_alpha():
  # α = .3 clipped to .25 in row 0 → .15; α = .5 clipped to .25 in column 1 → .05.
  got = losses.semantic_margin_triplet(
    SIM, METRIC, temperature=5.0, max_margin=0.25, reduction="sum"
  )
  assert float(got) == pytest.approx(0.2, abs=1e-6)


def test_hard_and_soft_pick_nearest_and_furthest_negative():
  sim = jnp.array([[0.5, 0.45, -0.5], [0.0, 0.5, 0.0], [0.0, 0.0, 0.5]])
  metric = jnp.zeros((3, 3))
  hard = losses.semantic_margin_triplet(sim, metric, sampling="hard", reduction="none")
  soft = losses.semantic_margin_triplet(sim, metric, sampling="soft", reduction="none")
  # α = 0: hard gives [.45 − .5]+ = 0 ... so use the negative score itself through a margin of 0.1.
  assert float(hard.image_to_text[0]) == 0.0 and float(soft.image_to_text[0]) == 0.0
  metric = jnp.full((3, 3), 0.0).at[0, 0].set(0.5)  # α = .5/5 = .1 for query row 0
  hard = losses.semantic_margin_triplet(sim, metric, sampling="hard", reduction="none")
  soft = losses.semantic_margin_triplet(sim, metric, sampling="soft", reduction="none")
  assert float(hard.image_to_text[0]) == pytest.approx(0.1 + 0.45 - 0.5, abs=1e-6)
  assert float(soft.image_to_text[0]) == pytest.approx(0.0, abs=1e-6)  # [.1 − .5 − .5]+


@pytest.mark.parametrize("sampling", ["hard", "soft"])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_numpy_with_several_positives_and_padding(sampling, seed):
  sim, pos, where, _, metric = make_batch(seed, n_img=4, captions_per_image=2, pad_img=1, pad_txt=1)
  got = losses.semantic_margin_triplet(
    jnp.asarray(sim),
    jnp.asarray(metric),
    positives=pos,
    where=where,
    temperature=3.0,
    sampling=sampling,
  )
  assert float(got) == pytest.approx(
    ref.semantic_margin(sim, metric, pos, where, 3.0, sampling), rel=1e-5
  )


def test_random_sampling_is_keyed_and_only_picks_valid_negatives():
  sim, pos, where, _, metric = make_batch(7, n_img=3, captions_per_image=1, pad_img=1, pad_txt=1)
  sim[~where] = 50.0  # a padded "negative" would give a huge hinge
  f = lambda k: losses.semantic_margin_triplet(
    jnp.asarray(sim),
    jnp.asarray(metric),
    positives=pos,
    where=where,
    sampling="random",
    key=k,
    reduction="none",
  )
  a, b = f(jax.random.key(0)), f(jax.random.key(0))
  np.testing.assert_array_equal(a.image_to_text, b.image_to_text)
  # Every per-query value must be the hinge against one of its valid negatives.
  for k in range(20):
    out = f(jax.random.key(k))
    for q in range(3):
      candidates = [
        max(0.0, (metric[q, q] - metric[q, m]) / 5.0 + sim[q, m] - sim[q, q])
        for m in range(3)
        if m != q
      ]
      assert min(abs(float(out.image_to_text[q]) - c) for c in candidates) < 1e-5
  with pytest.raises(ValueError, match="key"):
    losses.semantic_margin_triplet(SIM, METRIC, sampling="random")


def test_keep_triplet_adds_the_vse_loss():
  kept = losses.semantic_margin_triplet(SIM, METRIC, keep_triplet=True)
  assert float(kept) == pytest.approx(
    float(losses.semantic_margin_triplet(SIM, METRIC)) + float(losses.triplet(SIM)), abs=1e-6
  )


def test_hard_and_soft_sampling_differ_where_both_hinges_are_active():
  # Row 0: positive .5, negatives .45 (nearest) and -.5 (furthest); φ = [2, .5, -4], τ = 5.
  sim = jnp.array([[0.5, 0.45, -0.5], [0.0, 0.5, 0.0], [0.0, 0.0, 0.5]])
  metric = jnp.zeros((3, 3)).at[0].set(jnp.array([2.0, 0.5, -4.0]))
  negatives = jnp.array([False, True, True])
  assert int(choose_negative(sim[0], negatives, sampling="hard", key=None)) == 1
  assert int(choose_negative(sim[0], negatives, sampling="soft", key=None)) == 2
  hard = losses.semantic_margin_triplet(sim, metric, sampling="hard", reduction="none")
  soft = losses.semantic_margin_triplet(sim, metric, sampling="soft", reduction="none")
  # hard: α = (2 − .5)/5 = .3 → [.3 + .45 − .5]+ = .25
  # soft: α = (2 + 4)/5 = 1.2 → [1.2 − .5 − .5]+ = .2
  assert float(hard.image_to_text[0]) == pytest.approx(0.25, abs=1e-6)
  assert float(soft.image_to_text[0]) == pytest.approx(0.2, abs=1e-6)
