"""The official-checkpoint converter: names, shapes, file round trip, clear errors."""

import argparse
import pickle

import jax
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sgraf_reference import flat_state_dict, torch_model  # noqa: E402

from jitr.models.sgraf import SGRAF  # noqa: E402
from jitr.models.sgraf.convert import (  # noqa: E402
  config_from_state_dict,
  load_official_checkpoint,
  params_from_state_dict,
)


def _save_official(path, parts, **extra):
  """The dict the official train.py's save_checkpoint writes."""
  opt = argparse.Namespace(module_name="SGR", embed_size=8, sim_dim=4, margin=0.2)
  state = [p.state_dict() for p in parts]
  torch.save(
    {"epoch": 3, "model": state, "best_rsum": 512.5, "opt": opt, "Eiters": 7, **extra}, path
  )


def _shapes(tree):
  return jax.tree.map(lambda x: tuple(np.shape(x)), tree)


@pytest.mark.parametrize("module", ["SGR", "SAF"])
def test_converted_tree_is_the_models_tree(module):
  state = flat_state_dict(torch_model(module))
  params, stats = params_from_state_dict(state)
  config = config_from_state_dict(state)
  assert config["module"] == module and config["vocab_size"] == 20
  model = SGRAF(**config)
  want = jax.eval_shape(
    model.init, jax.random.key(0), np.zeros((2, 5, 6)), None, np.zeros((2, 4), int), np.ones(2, int)
  )
  assert _shapes(params) == _shapes(want["params"])
  assert _shapes(stats) == _shapes(want["batch_stats"])


def test_linear_and_gru_weights_are_transposed_and_named():
  parts = torch_model("SGR")
  state = flat_state_dict(parts)
  params, stats = params_from_state_dict(state)
  np.testing.assert_array_equal(params["img_enc"]["fc"]["kernel"], state["img_enc.fc.weight"].T)
  gru = params["txt_enc"]["cap_rnn"]["backward"]
  np.testing.assert_array_equal(
    gru["recurrent_kernel"], state["txt_enc.cap_rnn.weight_hh_l0_reverse"].T
  )
  np.testing.assert_array_equal(
    params["sim_enc"]["SGR_module_2"]["graph_key_w"]["bias"],
    state["sim_enc.SGR_module.2.graph_key_w.bias"],
  )
  np.testing.assert_array_equal(
    stats["sim_enc"]["v_global_w"]["bn_local"]["var"],
    state["sim_enc.v_global_w.embedding_local.1.running_var"],
  )


@pytest.mark.parametrize("module", ["SGR", "SAF"])
def test_checkpoint_file_round_trips_with_weights_only(tmp_path, module):
  parts = torch_model(module)
  path = tmp_path / "model_best.pth.tar"
  _save_official(path, parts)
  got = load_official_checkpoint(path)
  want = params_from_state_dict(flat_state_dict(parts))
  jax.tree.map(np.testing.assert_array_equal, got, want)


def test_missing_key_is_named():
  state = flat_state_dict(torch_model("SAF"))
  del state["sim_enc.SAF_module.bn.running_var"]
  with pytest.raises(KeyError, match="missing key 'sim_enc.SAF_module.bn.running_var'"):
    params_from_state_dict(state)


def test_unexpected_key_is_named():
  state = flat_state_dict(torch_model("SGR"))
  state["txt_enc.cap_rnn.weight_ih_l1"] = state["txt_enc.cap_rnn.weight_ih_l0"]
  with pytest.raises(KeyError, match="unexpected keys.*txt_enc.cap_rnn.weight_ih_l1"):
    params_from_state_dict(state)


def test_wrong_rank_is_named():
  state = flat_state_dict(torch_model("SGR"))
  state["sim_enc.sim_eval_w.weight"] = state["sim_enc.sim_eval_w.weight"][0]
  with pytest.raises(ValueError, match="'sim_enc.sim_eval_w.weight' must have 2 dims"):
    params_from_state_dict(state)


def test_not_an_sgraf_checkpoint(tmp_path):
  path = tmp_path / "other.pth"
  torch.save({"state_dict": {}}, path)
  with pytest.raises(ValueError, match="other.pth: expected an official SGRAF checkpoint"):
    load_official_checkpoint(path)


class Payload:
  """An arbitrary class: weights_only loading must refuse to build it."""


def test_arbitrary_objects_are_never_unpickled(tmp_path):
  path = tmp_path / "evil.pth"
  _save_official(path, torch_model("SGR"), extra=Payload())
  with pytest.raises(pickle.UnpicklingError, match="Payload"):
    load_official_checkpoint(path)
