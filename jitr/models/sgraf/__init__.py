"""SGR / SAF (SGRAF): the similarity model (``model``, its pair-scoring ``head``), its
adapter to :class:`~jitr.models.RetrievalModel`, its registry entries (``network``:
``"sgr"``, ``"saf"``), the converter of official weights (``convert``) and its official
checkpoint's format (``official``)."""

from jitr.models.sgraf.adapter import sgraf_model
from jitr.models.sgraf.model import SGRAF, SGRAFSimilarity, sgraf_similarity
from jitr.models.sgraf.network import network

__all__ = ["SGRAF", "SGRAFSimilarity", "network", "sgraf_model", "sgraf_similarity"]
