"""The registry's entry for ``"vsrn"``: its builder's settings and its official checkpoint."""

from jitr.models.retrieval_model import Network
from jitr.models.vsrn.adapter import build
from jitr.models.vsrn.model import VSRN
from jitr.models.vsrn.official import OFFICIAL

#: The registry's entry for ``"vsrn"``.
NETWORK = Network(
  build,
  settings_of=VSRN,
  extra_settings={"caption_weight": 1.0, "dataset": "f30k"},
  official=OFFICIAL,
  fresh_params={"caption_model": "VSRN caption decoder (official VSRN checkpoints have none)"},
)
