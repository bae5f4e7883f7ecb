"""Flax encoders (image, text) and the dual encoder.

Image: :class:`RegionEncoder` (region features, max / mean / GPO pooling),
:class:`ConvEncoder` (pixels). Text: :class:`GRUTextEncoder` (GRU or BiGRU).
Pooling: :class:`GPO`. Joint model: :class:`DualEncoder`. Similarity models
(cross-attention scoring of every pair): :class:`SGRAF` (SGR / SAF). VSRN (region GCN
reasoning + GRU, auxiliary captioning loss): :class:`VSRN`.
"""

from jitr.models.cnn import ConvEncoder
from jitr.models.common import l2_normalize, lengths_to_mask, masked_max, masked_mean
from jitr.models.dual_encoder import DualEncoder, create_dual_encoder, similarity
from jitr.models.gpo import GPO, gpo_pool, positional_encoding, sort_valid_desc
from jitr.models.gru import GRU, BiGRU, gru_scan, reverse_padded
from jitr.models.region_encoder import RegionEncoder, SetPool
from jitr.models.sgraf import SGRAF, SGRAFSimilarity, sgraf_similarity
from jitr.models.text_gru import GRUTextEncoder
from jitr.models.vsrn import VSRN, VSRNImageEncoder, VSRNTextEncoder, vsrn_dataset_options
from jitr.models.vsrn_captioner import VSRNCaptioner

__all__ = [
  "BiGRU",
  "ConvEncoder",
  "DualEncoder",
  "GPO",
  "GRU",
  "GRUTextEncoder",
  "RegionEncoder",
  "SGRAF",
  "SGRAFSimilarity",
  "SetPool",
  "VSRN",
  "VSRNCaptioner",
  "VSRNImageEncoder",
  "VSRNTextEncoder",
  "create_dual_encoder",
  "vsrn_dataset_options",
  "gpo_pool",
  "gru_scan",
  "l2_normalize",
  "lengths_to_mask",
  "masked_max",
  "masked_mean",
  "positional_encoding",
  "reverse_padded",
  "sgraf_similarity",
  "similarity",
  "sort_valid_desc",
]
