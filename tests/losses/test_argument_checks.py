"""Settings no loss can mean are refused in one line naming the argument and the range:
negative margins and term weights, NaN, a bool or a string for a number, a number for a
switch. Zero margins and weights stay valid."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses

SIM = jnp.asarray([[0.5, 0.1], [0.2, 0.4]])
POS = jnp.eye(2, dtype=bool)
NAN = float("nan")

REFUSED = [
  (
    lambda: losses.triplet(SIM, margin=-0.2),
    "margin: expected a finite number >= 0, got -0.2",
  ),
  (
    lambda: losses.triplet(SIM, margin="0.2"),
    "margin: expected a finite number >= 0, got '0.2' (str)",
  ),
  (
    lambda: losses.semantic_hard_negatives(SIM, SIM, margin=-0.185),
    "margin: expected a finite number >= 0, got -0.185",
  ),
  (
    lambda: losses.semantic_margin_triplet(SIM, SIM, max_margin=-1),
    "max_margin: expected a finite number >= 0, got -1",
  ),
  (
    lambda: losses.semantic_margin_triplet(SIM, SIM, keep_triplet=True, triplet_margin=-0.2),
    "triplet_margin: expected a finite number >= 0, got -0.2",
  ),
  (
    lambda: losses.semantic_margin_triplet(SIM, SIM, temperature=True),
    "temperature: expected a finite number > 0, got True (bool)",
  ),
  (
    lambda: losses.semantic_margin_triplet(SIM, SIM, keep_triplet="False"),
    "keep_triplet: expected True or False, got 'False' (str)",
  ),
  (
    lambda: losses.smooth_ndcg(SIM, SIM, temperature=True),
    "temperature: expected a finite number > 0, got True (bool)",
  ),
  (
    lambda: losses.smooth_ndcg(SIM, SIM, top_m=-1),
    "top_m: expected an int >= 0, got -1",
  ),
  (
    lambda: losses.objective({"smooth_ndcg": {"top_m": 2.0}}),
    "top_m: expected an int >= 0, got 2.0",
  ),
  (
    lambda: losses.adaptive_listwise(SIM, sharpness="0.5"),
    "sharpness: expected a finite number > 0, got '0.5' (str)",
  ),
  (
    lambda: losses.objective({"triplet": {"weight": NAN}}),
    "objective term 'triplet': weight: expected a finite number >= 0, got nan",
  ),
  (
    lambda: losses.objective({"triplet": {"weight": -1}}),
    "objective term 'triplet': weight: expected a finite number >= 0, got -1",
  ),
  (
    lambda: losses.objective({"triplet": {"weight": "1"}}),
    "objective term 'triplet': weight: expected a finite number >= 0, got '1' (str)",
  ),
  (
    lambda: losses.objective({"triplet": {"weight": 1.0, "margin": -0.2}})(SIM, positives=POS),
    "margin: expected a finite number >= 0, got -0.2",
  ),
]


@pytest.mark.parametrize("call,message", REFUSED)
def test_a_setting_no_loss_can_mean_is_one_clear_error(call, message):
  with pytest.raises(ValueError) as err:
    call()
  assert str(err.value) == message


def test_zero_margins_and_weights_and_numpy_numbers_are_valid():
  assert float(losses.triplet(SIM, margin=0.0)) >= 0
  assert float(losses.triplet(SIM, margin=np.float32(0.5))) > 0
  assert float(losses.semantic_hard_negatives(SIM, SIM, margin=0)) >= 0
  assert np.isfinite(float(losses.semantic_margin_triplet(SIM, SIM, max_margin=0.0)))
  total, _ = losses.objective({"triplet": {"weight": 0}})(SIM, positives=POS)
  assert float(total) == 0.0


def test_a_traced_margin_is_not_checked():
  value = jax.jit(lambda m: losses.triplet(SIM, margin=m))(jnp.float32(0.2))
  assert np.isfinite(float(value))
