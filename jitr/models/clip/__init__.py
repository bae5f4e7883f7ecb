"""CLIP and SigLIP dual encoders in Flax, equal to open_clip's: the towers
(:class:`ClipModel`, shaped by :func:`clip_config` from open_clip's model configs), weights
from a user's open_clip or Hugging Face files (:func:`load_open_clip`, :func:`load_hf_clip`)
and back to open_clip (:func:`export_open_clip`)."""

from jitr.models.clip.config import ClipConfig, ClipTextConfig, ClipVisionConfig, clip_config
from jitr.models.clip.model import ClipModel
from jitr.models.clip.open_clip_configs import Preprocessing
from jitr.models.clip.weights import ImportedClip, export_open_clip, load_hf_clip, load_open_clip

__all__ = [
  "ClipConfig",
  "ClipModel",
  "ImportedClip",
  "Preprocessing",
  "ClipTextConfig",
  "ClipVisionConfig",
  "clip_config",
  "export_open_clip",
  "load_hf_clip",
  "load_open_clip",
]
