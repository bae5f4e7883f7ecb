"""VSE∞ as its official code builds it: BUTD regions (Linear + MLP residual, GPO) and
BERT captions (Linear, GPO), its adapter to :class:`~jitr.models.RetrievalModel` and its
registry entry (``"vseinf"``)."""

from jitr.models.vseinf.adapter import NETWORK, create_vseinf, vseinf_model
from jitr.models.vseinf.image_encoder import ImageEncoder, ResidualMLP
from jitr.models.vseinf.model import VSEInfinity
from jitr.models.vseinf.text_encoder import TextEncoder

__all__ = [
  "NETWORK",
  "ImageEncoder",
  "ResidualMLP",
  "TextEncoder",
  "VSEInfinity",
  "create_vseinf",
  "vseinf_model",
]
