"""VSRN: the region-GCN dual encoder (``model``) and its captioner (``captioner``), its
adapter to :class:`~jitr.models.RetrievalModel`, its registry entry (``network``,
``"vsrn"``), the converter of official weights (``convert``) and its official checkpoint's
format (``official``)."""

from jitr.models.vsrn.adapter import caption_targets, vsrn_model
from jitr.models.vsrn.captioner import VSRNCaptioner
from jitr.models.vsrn.model import VSRN, VSRNImageEncoder, VSRNTextEncoder, vsrn_dataset_options
from jitr.models.vsrn.network import NETWORK

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
