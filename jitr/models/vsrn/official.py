"""The official VSRN checkpoint as ``jitr-import`` reads it (:data:`OFFICIAL`)."""

from __future__ import annotations

from typing import Any

from jitr.models.official_format import ConvertedWeights, OfficialFormat
from jitr.models.vsrn.convert import (
  PREFIXES,
  config_from_state_dict,
  has_caption_model,
  params_from_state_dict,
)


def holds_vsrn(state_dict: dict[str, Any]) -> bool:
  """Whether a flat ``img_enc.*`` / ``txt_enc.*`` state dict is VSRN's: a GRU text tower
  (``txt_enc.rnn``)."""
  return any(k.startswith("txt_enc.rnn.") for k in state_dict)


def converted_weights(state_dict: dict[str, Any]) -> ConvertedWeights:
  """The official flat state dict as a ``"vsrn"`` network's weights; without a
  captioning branch (official checkpoints hold none) its ``caption_weight`` is 0."""
  fields = config_from_state_dict(state_dict)
  params, batch_stats = params_from_state_dict(state_dict)
  if not has_caption_model(state_dict):
    fields["caption_weight"] = 0.0
  img_dim = int(state_dict["img_enc.fc.weight"].shape[1])
  return ConvertedWeights("vsrn", fields, img_dim, params, batch_stats)


#: The official VSRN checkpoint: ``[img_enc, txt_enc]`` with a GRU text tower.
OFFICIAL = OfficialFormat("VSRN", PREFIXES, converted_weights, holds=holds_vsrn)
