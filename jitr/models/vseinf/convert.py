"""Official VSE∞ weights (woodfrog/vse_infty ``VSEModel.state_dict()``: the image
tower's and the text tower's PyTorch state dicts) as :class:`VSEInfinity` variables.

Linear weights ``[out, in]`` become kernels ``[in, out]``; the GPO's GRU becomes
:class:`jitr.models.gru.BiGRU`'s kernels; ``mlp.bns.0`` becomes ``bns_0`` (params and
running statistics); ``mlp.bns.1``, which the official forward never calls, is read and
dropped; ``bert.*`` goes through :func:`jitr.models.bert.bert_params`.

An official checkpoint (``train.py``'s ``{'epoch', 'model': [img_enc, txt_enc state dicts],
'best_rsum', 'opt', 'Eiters'}``) holds the two towers under the prefixes :data:`PREFIXES`
(``jitr.models.torch_state.flatten_state_dicts`` joins them into one flat state dict, a
``nn.DataParallel`` ``module.`` prefix dropped); :func:`holds_vseinf` tells it from VSRN's,
which has the same two prefixes, by the BERT inside its text tower.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jitr.models.bert import BertConfig, bert_params
from jitr.models.torch_state import StateDictReader

PREFIXES = ("img_enc", "txt_enc")
_BERT_WORDS = "txt_enc.bert.embeddings.word_embeddings.weight"


def _gpo(reader: StateDictReader, prefix: str) -> dict:
  return {
    "bigru": {
      "forward": reader.gru(f"{prefix}.gru"),
      "backward": reader.gru(f"{prefix}.gru", "_reverse"),
    },
    "linear": reader.linear(f"{prefix}.linear", bias=False),
  }


def image_variables(state_dict: Mapping[str, Any]) -> tuple[dict, dict]:
  """``(params, batch_stats)`` of :class:`~jitr.models.vseinf.ImageEncoder` from an
  ``EncoderImageAggr`` state dict."""
  reader = StateDictReader(dict(state_dict), "VSE∞ image encoder state_dict")
  bn_params, bn_stats = reader.batch_norm("mlp.bns.0")
  reader.batch_norm("mlp.bns.1")  # built by the official MLP, never used by its forward
  params = {
    "fc": reader.linear("fc"),
    "mlp": {
      "layers_0": reader.linear("mlp.layers.0"),
      "bns_0": bn_params,
      "layers_1": reader.linear("mlp.layers.1"),
    },
    "gpool": _gpo(reader, "gpool"),
  }
  reader.finish()
  return params, {"mlp": {"bns_0": bn_stats}}


def official_variables(
  image_state: Mapping[str, Any], text_state: Mapping[str, Any], bert_config: BertConfig
) -> dict:
  """:class:`~jitr.models.vseinf.VSEInfinity` variables from the official image and text
  towers' state dicts (``text_state`` holds ``bert.*``, ``linear.*``, ``gpool.*``)."""
  bert = {k[len("bert.") :]: v for k, v in text_state.items() if k.startswith("bert.")}
  head = {k: v for k, v in text_state.items() if not k.startswith("bert.")}
  reader = StateDictReader(head, "VSE∞ text encoder state_dict")
  text = {"linear": reader.linear("linear"), "gpool": _gpo(reader, "gpool")}
  reader.finish()
  image, stats = image_variables(image_state)
  params = {
    "bert": bert_params(bert, bert_config),
    "text_encoder": text,
    "image_encoder": image,
  }
  return {"params": params, "batch_stats": {"image_encoder": stats}}


def holds_vseinf(state_dict: Mapping[str, Any]) -> bool:
  """Whether a flat ``img_enc.*`` / ``txt_enc.*`` state dict is VSE∞'s: a BERT in its text
  tower (VSRN's has a GRU)."""
  return any(k.startswith("txt_enc.bert.") for k in state_dict)


def _tower(state_dict: Mapping[str, Any], prefix: str) -> dict[str, Any]:
  return {k[len(prefix) + 1 :]: v for k, v in state_dict.items() if k.startswith(f"{prefix}.")}


def config_from_state_dict(state_dict: Mapping[str, Any]) -> dict[str, Any]:
  """The model fields the weights fix: ``embed_dim`` (rows of ``img_enc.fc.weight``),
  ``img_dim`` (its columns) and ``vocab_size`` (rows of BERT's word embedding)."""
  for key in ("img_enc.fc.weight", "txt_enc.linear.weight", _BERT_WORDS):
    if key not in state_dict:
      raise KeyError(f"VSE∞ state_dict: missing key {key!r}")
  embed, img_dim = (int(n) for n in state_dict["img_enc.fc.weight"].shape)
  return {
    "embed_dim": embed,
    "img_dim": img_dim,
    "vocab_size": int(state_dict[_BERT_WORDS].shape[0]),
  }


def bert_config_from_state_dict(state_dict: Mapping[str, Any]) -> BertConfig:
  """The sizes of the BERT in the text tower, read from its tensors' shapes: the word,
  position and token-type embeddings, the layers, the hidden and feed-forward widths. The
  head count, which no tensor shows, is 1 here: converting the weights does not read it
  (the BERT folder's ``config.json`` gives it)."""
  words = state_dict[_BERT_WORDS]
  layers = {
    int(m.group(1))
    for k in state_dict
    if (m := re.match(r"txt_enc\.bert\.encoder\.layer\.(\d+)\.", k))
  }
  if not layers:
    raise KeyError("VSE∞ state_dict: missing key 'txt_enc.bert.encoder.layer.0.*'")
  shape = lambda name: tuple(state_dict[f"txt_enc.bert.{name}"].shape)
  for name in (
    "embeddings.position_embeddings.weight",
    "embeddings.token_type_embeddings.weight",
    "encoder.layer.0.intermediate.dense.weight",
  ):
    if f"txt_enc.bert.{name}" not in state_dict:
      raise KeyError(f"VSE∞ state_dict: missing key 'txt_enc.bert.{name}'")
  return BertConfig(
    vocab_size=int(words.shape[0]),
    hidden_size=int(words.shape[1]),
    num_hidden_layers=max(layers) + 1,
    num_attention_heads=1,
    intermediate_size=shape("encoder.layer.0.intermediate.dense.weight")[0],
    max_position_embeddings=shape("embeddings.position_embeddings.weight")[0],
    type_vocab_size=shape("embeddings.token_type_embeddings.weight")[0],
  )


def params_from_state_dict(state_dict: Mapping[str, Any]) -> tuple[dict, dict]:
  """``(params, batch_stats)`` of :class:`VSEInfinity` from the flat state dict of an
  official checkpoint (the BERT sized by :func:`bert_config_from_state_dict`)."""
  variables = official_variables(
    _tower(state_dict, "img_enc"),
    _tower(state_dict, "txt_enc"),
    bert_config_from_state_dict(state_dict),
  )
  return variables["params"], variables["batch_stats"]
