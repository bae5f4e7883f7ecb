"""Flax encoders (image, text) and the dual encoder.

Image: :class:`RegionEncoder` (region features, max / mean / GPO pooling),
:class:`ConvEncoder` (pixels). Text: :class:`GRUTextEncoder` (GRU or BiGRU).
Pooling: :class:`GPO`. Pretrained text encoder: :class:`BertEncoder` (BERT, weights from a
Hugging Face folder through :func:`load_pretrained`). Joint model: :class:`DualEncoder`.
CLIP and SigLIP towers equal to open_clip's: :class:`ClipModel` (shaped by
:func:`clip_config`; weights through :func:`load_open_clip` / :func:`load_hf_clip`, back to
open_clip through :func:`export_open_clip`).
Similarity models (cross-attention scoring of every pair): :class:`SGRAF` (SGR / SAF). VSRN
(region GCN reasoning + GRU, auxiliary captioning loss): :class:`VSRN`. CVSE (instance-level
self-attention fused with a consensus level over a concept graph; its triplet and KL
terms as auxiliary losses): :class:`CVSE`, :func:`cvse_model`. Two-branch MLPs over
class-labelled image and text vectors (CMAL²R's experiments): :class:`TwoBranch`,
:func:`two_branch_model`. Training and evaluation see
every network through one interface, :class:`RetrievalModel` (built by name from a config:
``make_model(config.model, vocab_size, constants)``, registry :data:`MODELS` of
:class:`Network` s, each declaring the batch keys and dataset constants it needs).

Each network is a package: :mod:`!jitr.models.vse`, :mod:`!jitr.models.sgraf`,
:mod:`!jitr.models.vsrn`, :mod:`!jitr.models.cvse`, :mod:`!jitr.models.vseinf`,
:mod:`!jitr.models.twobranch` (its modules, its adapter to :class:`RetrievalModel`, built
on :func:`!jitr.models.dual_encoder.dual_encoder` for a dual encoder, its registry entry
``network.NETWORK``, and where it has one its converter of official weights and their
format, :class:`!jitr.models.official_format.OfficialFormat`).
"""

from jitr.models.bert import BertConfig, BertEncoder, bert_params, load_pretrained, read_config
from jitr.models.clip import (
  ClipConfig,
  ClipModel,
  ClipTextConfig,
  ClipVisionConfig,
  ImportedClip,
  Preprocessing,
  clip_config,
  export_open_clip,
  load_hf_clip,
  load_open_clip,
)
from jitr.models.common import lengths_to_mask, masked_max, masked_mean
from jitr.models.cvse import CVSE, ConceptInputs, CVSEEmbeddings, cvse_model
from jitr.models.gpo import GPO, gpo_pool, positional_encoding, sort_valid_desc
from jitr.models.gru import GRU, BiGRU, gru_scan, reverse_padded
from jitr.models.official_checkpoint import OfficialCheckpointError
from jitr.models.registry import MODELS, make_model
from jitr.models.retrieval_model import ModelOutput, Network, RetrievalModel, similarity
from jitr.models.sgraf import SGRAF, SGRAFSimilarity, sgraf_model, sgraf_similarity
from jitr.models.twobranch import TwoBranch, two_branch_model
from jitr.models.vse import (
  ConvEncoder,
  DualEncoder,
  GRUTextEncoder,
  RegionEncoder,
  SetPool,
  create_dual_encoder,
  dual_encoder_model,
)
from jitr.models.vsrn import (
  VSRN,
  VSRNCaptioner,
  VSRNImageEncoder,
  VSRNTextEncoder,
  vsrn_dataset_options,
  vsrn_model,
)

__all__ = [
  "MODELS",
  "ModelOutput",
  "Network",
  "OfficialCheckpointError",
  "RetrievalModel",
  "BertConfig",
  "BertEncoder",
  "BiGRU",
  "ClipConfig",
  "ClipModel",
  "ClipTextConfig",
  "ClipVisionConfig",
  "ImportedClip",
  "Preprocessing",
  "CVSE",
  "CVSEEmbeddings",
  "ConceptInputs",
  "ConvEncoder",
  "DualEncoder",
  "GPO",
  "GRU",
  "GRUTextEncoder",
  "RegionEncoder",
  "SGRAF",
  "SGRAFSimilarity",
  "SetPool",
  "TwoBranch",
  "VSRN",
  "VSRNCaptioner",
  "VSRNImageEncoder",
  "VSRNTextEncoder",
  "bert_params",
  "clip_config",
  "export_open_clip",
  "load_hf_clip",
  "load_open_clip",
  "create_dual_encoder",
  "cvse_model",
  "dual_encoder_model",
  "load_pretrained",
  "make_model",
  "sgraf_model",
  "two_branch_model",
  "vsrn_model",
  "vsrn_dataset_options",
  "gpo_pool",
  "gru_scan",
  "lengths_to_mask",
  "masked_max",
  "masked_mean",
  "positional_encoding",
  "read_config",
  "reverse_padded",
  "sgraf_similarity",
  "similarity",
  "sort_valid_desc",
]
