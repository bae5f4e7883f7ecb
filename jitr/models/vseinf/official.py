"""The official VSE∞ checkpoint as ``jitr-import`` reads it (:data:`OFFICIAL`): two towers
with a BERT inside the text one, whose sizes must be those of the BERT folder the run
reads (``config.text.pretrained``), and a saved ``opt`` that must describe jitr's
``vseinf`` (precomputed region features, both embeddings l2-normalised)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from jitr.models.bert import read_config
from jitr.models.official_format import ConvertedWeights, OfficialFormat
from jitr.models.vseinf.convert import (
  PREFIXES,
  bert_config_from_state_dict,
  config_from_state_dict,
  holds_vseinf,
  params_from_state_dict,
)

# The BERT sizes a VSE∞ checkpoint's tensors show, each compared with the folder's config.json
BERT_SIZES = (
  "vocab_size",
  "hidden_size",
  "num_hidden_layers",
  "intermediate_size",
  "max_position_embeddings",
  "type_vocab_size",
)


def converted_weights(state_dict: dict[str, Any]) -> ConvertedWeights:
  """The official flat state dict as a ``"vseinf"`` network's weights; ``extra["bert"]``:
  the sizes of the BERT in its text tower."""
  fields = config_from_state_dict(state_dict)
  params, batch_stats = params_from_state_dict(state_dict)
  extra = {"bert": bert_config_from_state_dict(state_dict)}
  return ConvertedWeights("vseinf", fields, fields["img_dim"], params, batch_stats, extra)


def opt_disagreement(opt: Mapping[str, Any], weights: ConvertedWeights) -> str | None:
  """Why a VSE∞ ``opt`` describes another network than jitr's ``vseinf``, or ``None``: the
  image tower of precomputed region features (``precomp_enc_type='basic'``; the others
  are CNN backbones over pixels), both embeddings l2-normalised."""
  del weights
  kind = opt.get("precomp_enc_type", "basic")
  if kind != "basic":
    return (
      f"opt.precomp_enc_type={kind!r}, but jitr's vseinf takes precomputed region features "
      "(the official 'basic' image encoder)"
    )
  for name in ("no_imgnorm", "no_txtnorm"):
    if opt.get(name):
      return f"opt.{name}=True, but jitr's vseinf l2-normalises both embeddings"
  return None


def check_bert_folder(folder: str, weights: ConvertedWeights) -> None:
  """The BERT ``folder``'s ``config.json`` must have the sizes of the checkpoint's BERT."""
  ours, sizes = read_config(os.path.join(folder, "config.json")), weights.extra["bert"]
  for name in BERT_SIZES:
    if getattr(ours, name) != getattr(sizes, name):
      raise ValueError(
        f"config.text.pretrained: the BERT of {folder} has {name} {getattr(ours, name)}, the "
        f"checkpoint's {getattr(sizes, name)}: use the BERT folder it was trained from "
        "(bert-base-uncased for the official VSE∞ models)"
      )


#: The official VSE∞ checkpoint: ``[img_enc, txt_enc]`` with a BERT text tower.
OFFICIAL = OfficialFormat(
  "VSE∞",
  PREFIXES,
  converted_weights,
  holds=holds_vseinf,
  opt_disagreement=opt_disagreement,
  check_pretrained=check_bert_folder,
)
