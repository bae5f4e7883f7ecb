"""VSE++ / VSE∞: the dual encoder (region, pixel and GRU towers, GPO pooling), its adapter
to :class:`~jitr.models.RetrievalModel` and its registry entry (``network``, ``"vse"``)."""

from jitr.models.vse.adapter import dual_encoder_model
from jitr.models.vse.cnn import ConvEncoder
from jitr.models.vse.model import DualEncoder, DualEncoderSettings, create_dual_encoder
from jitr.models.vse.network import NETWORK
from jitr.models.vse.region_encoder import RegionEncoder, SetPool
from jitr.models.vse.text_gru import GRUTextEncoder

__all__ = [
  "NETWORK",
  "ConvEncoder",
  "DualEncoder",
  "DualEncoderSettings",
  "GRUTextEncoder",
  "RegionEncoder",
  "SetPool",
  "create_dual_encoder",
  "dual_encoder_model",
]
