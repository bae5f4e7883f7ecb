"""The shape of a CLIP / SigLIP dual encoder, read from an open_clip model config.

:func:`clip_config` turns open_clip's JSON (a name of
:data:`!jitr.models.clip.open_clip_configs.OPEN_CLIP_CONFIGS`, or the dict of a user's
``model_configs/*.json``) into a :class:`ClipConfig`; what jitr does not build (a ResNet or
Hugging Face text tower, attentional poolers, layer scale, another timm trunk) is refused in
one line naming the field. Activations: ``"quick_gelu"`` (``x·σ(1.702x)``, OpenAI's
weights), ``"gelu"`` (exact, erf), ``"gelu_tanh"`` (tanh approximation).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from jitr.models.clip.open_clip_configs import OPEN_CLIP_CONFIGS, TIMM_TRUNKS

ACTIVATIONS = ("gelu", "quick_gelu", "gelu_tanh")


@dataclasses.dataclass(frozen=True)
class ClipVisionConfig:
  """The image tower: ``trunk`` ``"open_clip"`` (class token, ``ln_pre``, pre-LN blocks,
  ``ln_post`` on the class token, ``proj``) or ``"timm"`` (SigLIP's: patch bias, no class
  token, blocks, final norm, attention-pool head, no projection)."""

  trunk: str
  image_size: int
  patch_size: int
  width: int
  layers: int
  heads: int
  mlp_width: int
  norm_eps: float
  act: str

  @property
  def grid(self) -> int:
    """Patches per side."""
    return self.image_size // self.patch_size


@dataclasses.dataclass(frozen=True)
class ClipTextConfig:
  """The text transformer: token + position embedding, pre-LN blocks (``causal`` mask or
  none), ``ln_final``, pooling (``"argmax"``: at the highest token id, CLIP's EOT;
  ``"last"``: the last position, SigLIP), projection (``proj_bias``: a Linear with bias),
  ``hf_tokenizer`` (open_clip's ``hf_tokenizer_name``: the Hugging Face tokenizer its ids are
  of, SigLIP's; ``""``: CLIP's BPE)."""

  context_length: int
  vocab_size: int
  width: int
  heads: int
  layers: int
  mlp_width: int
  norm_eps: float
  act: str
  causal: bool
  pool: str
  proj_bias: bool
  hf_tokenizer: str = ""


@dataclasses.dataclass(frozen=True)
class ClipConfig:
  """A dual encoder: ``name`` (open_clip's), ``embed_dim``, the two towers,
  ``init_logit_scale`` (log 1/0.07; SigLIP's log 10 is in its weights),
  ``init_logit_bias`` (``None``: no bias, CLIP) and ``custom_text`` (open_clip keeps the
  text tower's weights under ``text.``)."""

  name: str
  embed_dim: int
  vision: ClipVisionConfig
  text: ClipTextConfig
  init_logit_scale: float
  init_logit_bias: float | None
  custom_text: bool

  @property
  def learns_bias(self) -> bool:
    """Whether the model learns a logit bias (SigLIP's, or any tower given an
    ``init_logit_bias``)."""
    return self.init_logit_bias is not None

  @property
  def is_siglip(self) -> bool:
    """Whether the towers are SigLIP's: a text tower of a Hugging Face tokenizer's ids (the
    default preprocessing is then SigLIP's squash)."""
    return bool(self.text.hf_tokenizer)

  def with_activation(self, act: str) -> ClipConfig:
    """The same shape with ``act`` in both towers (a timm trunk keeps its own)."""
    vision = (
      self.vision if self.vision.trunk == "timm" else dataclasses.replace(self.vision, act=act)
    )
    text = dataclasses.replace(self.text, act=act)
    return dataclasses.replace(self, vision=vision, text=text)

  def reduced(self, layers: int) -> ClipConfig:
    """The same config with at most ``layers`` blocks per tower (tests, small runs)."""
    vision = dataclasses.replace(self.vision, layers=min(layers, self.vision.layers))
    text = dataclasses.replace(self.text, layers=min(layers, self.text.layers))
    return dataclasses.replace(self, vision=vision, text=text)


_VISION_UNSUPPORTED = {
  "attentional_pool": False,
  "ls_init_value": None,
  "patch_dropout": 0.0,
  "no_ln_pre": False,
  "pos_embed_type": "learnable",
  "final_ln_after_pool": False,
  "pool_type": "tok",
  "act_kwargs": None,
  "block_type": None,
  "qk_norm": False,
}
_TEXT_UNSUPPORTED = {
  "hf_model_name": None,
  "ls_init_value": None,
  "embed_cls": False,
  "proj_type": "linear",
  "act_kwargs": None,
  "block_type": None,
  "qk_norm": False,
}


def _refuse(section: Mapping[str, Any], defaults: Mapping[str, Any], where: str) -> None:
  for key, default in defaults.items():
    if section.get(key, default) != default:
      raise ValueError(
        f"{where}.{key} = {section[key]!r}: jitr's towers build only {key} = {default!r}"
      )


def _vision(cfg: Mapping[str, Any], act: str, where: str) -> ClipVisionConfig:
  image_size = cfg.get("image_size", 224)
  if not isinstance(image_size, int):
    raise ValueError(f"{where}.image_size = {image_size!r}: expected one int (square images)")
  if "timm_model_name" in cfg:
    name = cfg["timm_model_name"]
    if name not in TIMM_TRUNKS:
      raise ValueError(
        f"{where}.timm_model_name = {name!r}: expected one of the SigLIP trunks "
        f"{sorted(TIMM_TRUNKS)}"
      )
    for key, want in (("timm_pool", "map"), ("timm_proj", "none")):
      if cfg.get(key) != want:
        raise ValueError(f"{where}.{key} = {cfg.get(key)!r}: expected {want!r} (SigLIP)")
    patch, width, depth, heads, ratio = TIMM_TRUNKS[name]
    return ClipVisionConfig(
      "timm", image_size, patch, width, depth, heads, int(width * ratio), 1e-6, "gelu"
    )
  layers = cfg.get("layers", 12)
  if not isinstance(layers, int):
    raise ValueError(f"{where}.layers = {layers!r}: expected an int (a ViT; ResNets are not built)")
  _refuse(cfg, _VISION_UNSUPPORTED, where)
  width = cfg.get("width", 768)
  heads = width // cfg.get("head_width", 64)
  mlp = int(width * cfg.get("mlp_ratio", 4.0))
  eps = (cfg.get("norm_kwargs") or {}).get("eps", 1e-5)
  return ClipVisionConfig(
    "open_clip", image_size, cfg.get("patch_size", 16), width, layers, heads, mlp, eps, act
  )


def _text(cfg: Mapping[str, Any], act: str, where: str) -> ClipTextConfig:
  _refuse(cfg, _TEXT_UNSUPPORTED, where)
  pool = cfg.get("pool_type", "argmax")
  if pool not in ("argmax", "last"):
    raise ValueError(f"{where}.pool_type = {pool!r}: expected 'argmax' or 'last'")
  width = cfg.get("width", 512)
  return ClipTextConfig(
    context_length=cfg.get("context_length", 77),
    vocab_size=cfg.get("vocab_size", 49408),
    width=width,
    heads=cfg.get("heads", 8),
    layers=cfg.get("layers", 12),
    mlp_width=int(width * cfg.get("mlp_ratio", 4.0)),
    norm_eps=(cfg.get("norm_kwargs") or {}).get("eps", 1e-5),
    act=act,
    causal=not cfg.get("no_causal_mask", False),
    pool=pool,
    proj_bias=cfg.get("proj_bias", False),
    hf_tokenizer=cfg.get("hf_tokenizer_name", ""),
  )


def clip_config(model: str | Mapping[str, Any], *, name: str | None = None) -> ClipConfig:
  """:class:`ClipConfig` of open_clip's model config ``model``: a name of
  :data:`!jitr.models.clip.open_clip_configs.OPEN_CLIP_CONFIGS` (``"ViT-B-16"``,
  ``"ViT-B-16-SigLIP"``, ...) or the config dict itself (``name`` then names it). Defaults
  are open_clip's dataclass defaults (``CLIPVisionCfg``, ``CLIPTextCfg``)."""
  if isinstance(model, str):
    if model not in OPEN_CLIP_CONFIGS:
      raise ValueError(f"model {model!r}: expected one of {sorted(OPEN_CLIP_CONFIGS)}")
    name, model = model, OPEN_CLIP_CONFIGS[model]
  name = name or "custom"
  act = "quick_gelu" if model.get("quick_gelu", False) else "gelu"
  for key in ("vision_cfg", "text_cfg"):
    if not isinstance(model.get(key), Mapping):
      raise ValueError(f"{name}: no {key} object (expected an open_clip model config)")
  if not isinstance(model.get("embed_dim"), int):
    raise ValueError(f"{name}: embed_dim = {model.get('embed_dim')!r}, expected an int")
  return ClipConfig(
    name=name,
    embed_dim=model["embed_dim"],
    vision=_vision(model["vision_cfg"], act, f"{name}.vision_cfg"),
    text=_text(model["text_cfg"], act, f"{name}.text_cfg"),
    init_logit_scale=float(model.get("init_logit_scale", math.log(1 / 0.07))),
    init_logit_bias=model.get("init_logit_bias"),
    custom_text=bool(model.get("custom_text", False)),
  )
