"""SGR / SAF (SGRAF): the similarity model (``model``, its pair-scoring ``head``), its
adapter to :class:`~jitr.models.RetrievalModel`, its registry entries (``"sgr"``,
``"saf"``) and the converter of official weights (``convert``)."""

from jitr.models.sgraf.adapter import network, sgraf_model
from jitr.models.sgraf.model import SGRAF, SGRAFSimilarity, sgraf_similarity

__all__ = ["SGRAF", "SGRAFSimilarity", "network", "sgraf_model", "sgraf_similarity"]
