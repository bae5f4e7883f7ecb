"""VSE∞ as its official code builds it: BUTD regions (Linear + MLP residual, GPO) and
BERT captions (Linear, GPO), its adapter to :class:`~jitr.models.RetrievalModel`, its
registry entry (``network``, ``"vseinf"``: WordPiece captions), the converter of official
weights (``convert``) and its official checkpoint's format (``official``)."""

from jitr.models.vseinf.adapter import VSEInfSettings, create_vseinf, vseinf_model
from jitr.models.vseinf.image_encoder import ImageEncoder, ResidualMLP
from jitr.models.vseinf.model import VSEInfinity
from jitr.models.vseinf.network import NETWORK
from jitr.models.vseinf.text_encoder import TextEncoder

__all__ = [
  "NETWORK",
  "ImageEncoder",
  "ResidualMLP",
  "TextEncoder",
  "VSEInfSettings",
  "VSEInfinity",
  "create_vseinf",
  "vseinf_model",
]
