"""The VSRN state_dict converter: official names -> the model's tree, transposes, the
official checkpoint layout, one clear error per bad key or file."""

import argparse

import jax
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from vsrn_reference import N_REGION, flat_state_dict, inputs, torch_vsrn  # noqa: E402

from jitr.models.vsrn import VSRN  # noqa: E402
from jitr.models.vsrn.convert import (  # noqa: E402
  config_from_state_dict,
  load_official_checkpoint,
  load_official_state_dict,
  params_from_state_dict,
)


def model_shapes(config):
  images, tokens, lengths = inputs()
  model = VSRN(**config)
  v = jax.eval_shape(
    model.init,
    jax.random.key(0),
    images,
    np.ones((3, N_REGION), bool),
    tokens,
    lengths,
    tokens,
    lengths,
  )
  return jax.tree.map(lambda s: s.shape, v)


@pytest.mark.parametrize("f30k", [False, True])
def test_converted_tree_is_the_models_tree(f30k):
  state = flat_state_dict(torch_vsrn(f30k=f30k))
  config = config_from_state_dict(state)
  assert config["feature_batch_norm"] is f30k and config["fc_l2norm"] is (not f30k)
  assert config["gcn_layers"] == 4 and config["caption_hidden_dim"] == 6
  params, stats = params_from_state_dict(state)
  want = model_shapes(config)
  assert jax.tree.map(np.shape, params) == want["params"]
  assert jax.tree.map(np.shape, stats) == want["batch_stats"]


def test_without_the_caption_model_only_the_encoders_are_converted():
  """The official checkpoint holds [img_enc, txt_enc] only."""
  state = flat_state_dict(torch_vsrn(), caption=False)
  params, _ = params_from_state_dict(state)
  assert set(params) == {"img_enc", "txt_enc"}
  assert "caption_hidden_dim" not in config_from_state_dict(state)


def test_conv_linear_and_gru_weights_are_transposed_and_named():
  parts = torch_vsrn()
  state = flat_state_dict(parts)
  params, stats = params_from_state_dict(state)
  gcn = parts[0].Rs_GCN_2
  np.testing.assert_array_equal(
    params["img_enc"]["Rs_GCN_2"]["theta"]["kernel"], gcn.theta.weight[:, :, 0].detach().numpy().T
  )
  np.testing.assert_array_equal(
    params["img_enc"]["Rs_GCN_2"]["W"]["kernel"], gcn.W[0].weight[:, :, 0].detach().numpy().T
  )
  np.testing.assert_array_equal(stats["img_enc"]["Rs_GCN_2"]["W_bn"]["var"], gcn.W[1].running_var)
  np.testing.assert_array_equal(
    params["txt_enc"]["rnn"]["recurrent_kernel"], parts[1].rnn.weight_hh_l0.detach().numpy().T
  )
  att = parts[2].decoder.attention
  dec = params["caption_model"]["decoder"]
  np.testing.assert_array_equal(
    dec["attention"]["linear2"]["kernel"], att.linear2.weight.detach().T
  )
  np.testing.assert_array_equal(dec["attention"]["linear1"]["bias"], att.linear1.bias.detach())


def test_official_checkpoint_file_round_trips_with_weights_only(tmp_path):
  parts = torch_vsrn(f30k=True)
  path = tmp_path / "model_best.pth.tar"
  opt = argparse.Namespace(data_name="f30k_precomp", embed_size=8)
  checkpoint = {"epoch": 3, "model": [parts[0].state_dict(), parts[1].state_dict()], "opt": opt}
  torch.save(checkpoint, path)
  state = load_official_state_dict(path)
  assert "img_enc.bn.running_mean" in state and "txt_enc.embed.weight" in state
  got = load_official_checkpoint(path)
  want = params_from_state_dict(flat_state_dict(parts, caption=False))
  jax.tree.map(np.testing.assert_array_equal, got, want)


def test_missing_key_is_named():
  state = flat_state_dict(torch_vsrn())
  del state["img_enc.Rs_GCN_3.phi.bias"]
  with pytest.raises(KeyError, match="VSRN state_dict: missing key 'img_enc.Rs_GCN_3.phi.bias'"):
    params_from_state_dict(state)


def test_unexpected_key_is_named():
  state = flat_state_dict(torch_vsrn())
  state["img_enc.extra.weight"] = torch.zeros(2)
  with pytest.raises(KeyError, match="unexpected keys \\['img_enc.extra.weight'\\]"):
    params_from_state_dict(state)


def test_wrong_rank_is_named():
  state = flat_state_dict(torch_vsrn())
  state["img_enc.Rs_GCN_1.g.weight"] = state["img_enc.Rs_GCN_1.g.weight"][:, :, 0]
  with pytest.raises(ValueError, match="'img_enc.Rs_GCN_1.g.weight' must have 3 dims"):
    params_from_state_dict(state)


def test_not_a_vsrn_checkpoint(tmp_path):
  path = tmp_path / "other.pth"
  torch.save({"model": [{}, {}, {}]}, path)
  with pytest.raises(ValueError, match="expected an official VSRN checkpoint"):
    load_official_state_dict(path)


def test_arbitrary_objects_are_never_unpickled(tmp_path):
  path = tmp_path / "evil.pth"
  torch.save({"model": [{}, {}], "payload": np.random.default_rng(0)}, path)
  with pytest.raises(Exception, match="holds objects jitr does not unpickle"):
    load_official_state_dict(path)
