"""The registry's entry for ``"vseinf"``: WordPiece captions of the run's BERT folder, and
its official checkpoint."""

from jitr.models.retrieval_model import Network
from jitr.models.vseinf.adapter import VSEInfSettings, build
from jitr.models.vseinf.official import OFFICIAL

#: The registry's entry for ``"vseinf"``.
NETWORK = Network(
  build, settings_of=VSEInfSettings, token_chunks=True, wordpiece=True, official=OFFICIAL
)
