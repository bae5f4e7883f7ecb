"""The registry's entry for ``"twobranch"``: image and text vectors in, no official
checkpoint."""

from jitr.models.retrieval_model import Network
from jitr.models.twobranch.adapter import INPUTS, build
from jitr.models.twobranch.model import TwoBranch

#: The registry's entry for ``"twobranch"``.
NETWORK = Network(build, inputs=INPUTS, settings_of=TwoBranch)
