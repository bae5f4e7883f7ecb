"""The registry's entries for ``"sgr"`` and ``"saf"``: SGRAF's two modules, one official
checkpoint format."""

from __future__ import annotations

from typing import Any

from jitr.models.retrieval_model import Network, RetrievalModel
from jitr.models.sgraf.adapter import sgraf_model
from jitr.models.sgraf.model import SGRAF
from jitr.models.sgraf.official import OFFICIAL


def network(module: str) -> Network:
  """The registry's entry for SGRAF's ``module`` (``"SGR"`` or ``"SAF"``)."""

  def build(config: dict[str, Any], vocab_size: int, constants: Any) -> RetrievalModel:
    del constants  # SGRAF reads no dataset constants
    return sgraf_model(SGRAF(vocab_size=vocab_size, module=module, **config))

  return Network(build, settings_of=SGRAF, official=OFFICIAL, pairwise=True)
