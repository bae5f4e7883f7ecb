"""Official VSE∞ weights (woodfrog/vse_infty ``VSEModel.state_dict()``: the image
tower's and the text tower's PyTorch state dicts) as :class:`VSEInfinity` variables.

Linear weights ``[out, in]`` become kernels ``[in, out]``; the GPO's GRU becomes
:class:`jitr.models.gru.BiGRU`'s kernels; ``mlp.bns.0`` becomes ``bns_0`` (params and
running statistics); ``mlp.bns.1``, which the official forward never calls, is read and
dropped; ``bert.*`` goes through :func:`jitr.models.bert.bert_params`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jitr.models.bert import BertConfig, bert_params
from jitr.models.torch_state import StateDictReader


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
