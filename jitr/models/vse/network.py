"""The registry's entry for ``"vse"``: the dual encoder of VSE++ / VSE∞ (no official
checkpoint is read)."""

from jitr.models.retrieval_model import Network
from jitr.models.vse.adapter import build
from jitr.models.vse.model import create_dual_encoder

#: The registry's entry for ``"vse"``.
NETWORK = Network(build, settings_of=create_dual_encoder, token_chunks=True)
