"""CVSE: the network (``model``: instance level ``attention``, consensus level over the
concept ``graph`` through a ``gcn``), its adapter to :class:`~jitr.models.RetrievalModel`
with its loss terms and registry entry (``adapter``), the official evaluation's label
completion (``completion``) and the converter of official weights (``convert``)."""

from jitr.models.cvse.adapter import (
  CONCEPT_LABELS,
  CONCEPTS,
  NETWORK,
  ConceptInputs,
  concept_graph,
  cvse_model,
)
from jitr.models.cvse.model import CVSE, CVSEEmbeddings

__all__ = [
  "CONCEPTS",
  "CONCEPT_LABELS",
  "CVSE",
  "CVSEEmbeddings",
  "ConceptInputs",
  "NETWORK",
  "concept_graph",
  "cvse_model",
]
