"""VSRN: the region-GCN dual encoder (``model``) and its captioner (``captioner``), its
adapter to :class:`~jitr.models.RetrievalModel` and registry entry (``"vsrn"``), and the
converter of official weights (``convert``)."""

from jitr.models.vsrn.adapter import NETWORK, caption_targets, vsrn_model
from jitr.models.vsrn.captioner import VSRNCaptioner
from jitr.models.vsrn.model import VSRN, VSRNImageEncoder, VSRNTextEncoder, vsrn_dataset_options

__all__ = [
  "NETWORK",
  "VSRN",
  "VSRNCaptioner",
  "VSRNImageEncoder",
  "VSRNTextEncoder",
  "caption_targets",
  "vsrn_dataset_options",
  "vsrn_model",
]
