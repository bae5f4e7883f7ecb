"""The official SGRAF checkpoint as ``jitr-import`` reads it (:data:`OFFICIAL`)."""

from __future__ import annotations

from typing import Any

from jitr.models.official_format import ConvertedWeights, OfficialFormat
from jitr.models.sgraf.convert import (
  PREFIXES,
  config_from_state_dict,
  params_from_state_dict,
)


def converted_weights(state_dict: dict[str, Any]) -> ConvertedWeights:
  """The official flat state dict as an ``"sgr"`` or ``"saf"`` network's weights (the
  module its ``sim_enc`` holds)."""
  fields = config_from_state_dict(state_dict)
  params, batch_stats = params_from_state_dict(state_dict)
  network = fields.pop("module").lower()
  return ConvertedWeights(network, fields, fields["img_dim"], params, batch_stats)


def opt_disagreement(opt: dict[str, Any], weights: ConvertedWeights) -> str | None:
  """``opt.module_name`` when it names the other module than the weights hold."""
  module = opt.get("module_name")
  if module is not None and module.lower() != weights.network:
    return f"opt.module_name={module!r}, but the weights hold {weights.network.upper()}"
  return None


#: The official SGRAF checkpoint: ``[img_enc, txt_enc, sim_enc]``, an SGR or an SAF.
OFFICIAL = OfficialFormat("SGRAF", PREFIXES, converted_weights, opt_disagreement=opt_disagreement)
