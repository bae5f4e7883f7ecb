"""SGR / SAF against a PyTorch reference written here from the official equations
(Paranioar/SGRAF ``model.py``: one caption at a time, ``pack_padded_sequence``,
``BatchNorm1d``), with the weights carried over by the state_dict converter."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sgraf_reference import flat_state_dict, inputs, torch_forward, torch_model  # noqa: E402

from jitr.models.sgraf import SGRAF  # noqa: E402
from jitr.models.sgraf.convert import config_from_state_dict, params_from_state_dict  # noqa: E402


def jax_forward(state_dict, images, tokens, lengths, train, block_size=3):
  params, stats = params_from_state_dict(state_dict)
  model = SGRAF(**config_from_state_dict(state_dict), text_dropout=0.0, sa_dropout=0.0)
  # two length buckets: the cut branch and the uncut one (each bucket compiles a branch)
  model = model.clone(block_size=block_size, length_buckets=2)
  variables = {"params": params, "batch_stats": stats}
  apply = jax.jit(lambda v, *a: model.apply(v, *a, train=train, mutable=["batch_stats"]))
  sim, updated = apply(variables, jnp.asarray(images), None, jnp.asarray(tokens), lengths)
  return np.asarray(sim), updated["batch_stats"]


@pytest.mark.parametrize("module", ["SGR", "SAF"])
def test_eval_sim_matches_torch_reference(module):
  parts = torch_model(module)
  images, tokens, lengths = inputs()
  want = torch_forward(parts, images, tokens, lengths, train=False)
  got, _ = jax_forward(flat_state_dict(parts), images, tokens, lengths, train=False)
  assert got.shape == (3, 4) and np.std(want) > 0.02
  np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("module", ["SGR", "SAF"])
def test_train_sim_and_running_stats_match_torch_reference(module):
  """Batch statistics in the forward (SAF: one BatchNorm call per caption) and the
  running statistics PyTorch leaves behind (momentum 0.1, unbiased running_var)."""
  parts = torch_model(module)
  state = flat_state_dict(parts)
  images, tokens, lengths = inputs(seed=1)
  want = torch_forward(parts, images, tokens, lengths, train=True)
  got, stats = jax_forward(state, images, tokens, lengths, train=True)
  np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
  _, want_stats = params_from_state_dict(flat_state_dict(parts))
  assert not np.allclose(
    want_stats["sim_enc"]["v_global_w"]["bn_local"]["mean"],
    params_from_state_dict(state)[1]["sim_enc"]["v_global_w"]["bn_local"]["mean"],
  )
  jax.tree.map(
    lambda g, w: np.testing.assert_allclose(g, w, atol=1e-5, rtol=1e-5), stats, want_stats
  )


def test_text_encoder_matches_packed_torch_bigru():
  parts = torch_model("SGR")
  images, tokens, lengths = inputs()
  parts[1].eval()
  with torch.no_grad():
    want = parts[1](torch.from_numpy(tokens), torch.from_numpy(lengths)).numpy()
  state = flat_state_dict(parts)
  params, _ = params_from_state_dict(state)
  model = SGRAF(**config_from_state_dict(state))
  words, mask = model.apply({"params": params}, tokens, lengths, method=model.encode_text)
  np.testing.assert_allclose(words[:, : want.shape[1]], want, atol=1e-5, rtol=0)
  np.testing.assert_array_equal(words[:, want.shape[1] :], 0.0)
  np.testing.assert_array_equal(mask, np.arange(8)[None] < lengths[:, None])
