"""The registry's entry for ``"cvse"``: its concept labels and constants, its builder's
settings and its official checkpoint."""

from jitr.models.cvse.adapter import BUILDER_DEFAULTS, CONCEPT_LABELS, CONCEPTS, build
from jitr.models.cvse.graph import THRESHOLD
from jitr.models.cvse.model import CVSE
from jitr.models.cvse.official import OFFICIAL
from jitr.models.retrieval_model import INPUTS, Network

#: The registry's entry for ``"cvse"``.
NETWORK = Network(
  build,
  inputs=(*INPUTS, CONCEPT_LABELS),
  constants=(CONCEPTS,),
  settings_of=CVSE,
  extra_settings={**BUILDER_DEFAULTS, "concept_threshold": THRESHOLD},
  official=OFFICIAL,
)
