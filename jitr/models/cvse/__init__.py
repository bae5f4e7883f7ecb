"""CVSE: the network (``model``: instance level ``attention``, consensus level over the
concept ``graph`` through a ``gcn``), its adapter to :class:`~jitr.models.RetrievalModel`
with its loss terms (``adapter``), its registry entry (``network``), the official
evaluation's label completion (``completion``), the converter of official weights
(``convert``) and its official checkpoint's format (``official``)."""

from jitr.models.cvse.adapter import (
  CONCEPT_LABELS,
  CONCEPTS,
  ConceptInputs,
  CVSETerms,
  concept_graph,
  cvse_model,
)
from jitr.models.cvse.model import CVSE, CVSEEmbeddings
from jitr.models.cvse.network import NETWORK

__all__ = [
  "CONCEPTS",
  "CONCEPT_LABELS",
  "CVSE",
  "CVSEEmbeddings",
  "CVSETerms",
  "ConceptInputs",
  "NETWORK",
  "concept_graph",
  "cvse_model",
]
