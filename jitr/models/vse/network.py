"""The registry's entry for ``"vse"``: the dual encoder of VSE++ / VSE∞ (no official
checkpoint is read)."""

from jitr.models.retrieval_model import Network
from jitr.models.vse.adapter import build
from jitr.models.vse.model import DualEncoderSettings

#: The registry's entry for ``"vse"``.
NETWORK = Network(build, settings_of=DualEncoderSettings, token_chunks=True)
