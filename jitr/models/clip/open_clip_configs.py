"""open_clip's model configs (``open_clip/model_configs/<name>.json``, open_clip_torch 3.3.0)
of the towers jitr builds, by open_clip's name, and the preprocessing of their pretrained
tags (``open_clip.get_pretrained_cfg(name, tag)``): recorded here so that nothing of
open_clip is needed to build a tower or import its weights (the parity step checks both
tables against open_clip itself).

A config is open_clip's JSON as a dict: ``embed_dim``, ``quick_gelu`` (QuickGELU
``x·σ(1.702x)`` instead of the exact GELU), ``vision_cfg`` (a ViT's ``image_size``,
``layers``, ``width``, ``patch_size``, ``head_width``; or a timm trunk's
``timm_model_name`` with ``timm_pool="map"``), ``text_cfg`` (``context_length``,
``vocab_size``, ``width``, ``heads``, ``layers``, SigLIP's ``no_causal_mask``,
``pool_type="last"``, ``proj_bias``, ``norm_kwargs``), SigLIP's ``init_logit_bias`` and
``custom_text`` (its text weights under ``text.``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)
INCEPTION_MEAN = (0.5, 0.5, 0.5)
INCEPTION_STD = (0.5, 0.5, 0.5)


def _clip(embed, image, patch, width, layers, text_width, text_heads, text_layers, **extra):
  vision = {"image_size": image, "layers": layers, "width": width, "patch_size": patch}
  vision.update(extra.pop("vision", {}))
  text = {
    "context_length": 77,
    "vocab_size": 49408,
    "width": text_width,
    "heads": text_heads,
    "layers": text_layers,
  }
  return {"embed_dim": embed, **extra, "vision_cfg": vision, "text_cfg": text}


def _siglip(embed, image, trunk, width, heads, layers, context=64, mlp_ratio=None):
  text = {
    "context_length": context,
    "vocab_size": 32000,
    "hf_tokenizer_name": "timm/ViT-B-16-SigLIP",
    "tokenizer_kwargs": {"clean": "canonicalize"},
    "width": width,
    "heads": heads,
    "layers": layers,
  }
  if mlp_ratio is not None:
    text["mlp_ratio"] = mlp_ratio
  text.update(no_causal_mask=True, proj_bias=True, pool_type="last", norm_kwargs={"eps": 1e-6})
  vision = {
    "image_size": image,
    "timm_model_name": trunk,
    "timm_model_pretrained": False,
    "timm_pool": "map",
    "timm_proj": "none",
  }
  return {
    "embed_dim": embed,
    "init_logit_bias": -10,
    "custom_text": True,
    "vision_cfg": vision,
    "text_cfg": text,
  }


#: open_clip's model configs by name (its ``model_configs/*.json``).
OPEN_CLIP_CONFIGS: dict[str, dict[str, Any]] = {
  "ViT-B-32": _clip(512, 224, 32, 768, 12, 512, 8, 12),
  "ViT-B-32-quickgelu": _clip(512, 224, 32, 768, 12, 512, 8, 12, quick_gelu=True),
  "ViT-B-16": _clip(512, 224, 16, 768, 12, 512, 8, 12),
  "ViT-B-16-quickgelu": _clip(512, 224, 16, 768, 12, 512, 8, 12, quick_gelu=True),
  "ViT-L-14": _clip(768, 224, 14, 1024, 24, 768, 12, 12),
  "ViT-L-14-quickgelu": _clip(768, 224, 14, 1024, 24, 768, 12, 12, quick_gelu=True),
  "ViT-L-14-336": _clip(768, 336, 14, 1024, 24, 768, 12, 12),
  "ViT-H-14": _clip(1024, 224, 14, 1280, 32, 1024, 16, 24, vision={"head_width": 80}),
  "ViT-B-16-SigLIP": _siglip(768, 224, "vit_base_patch16_siglip_224", 768, 12, 12),
  "ViT-B-16-SigLIP-256": _siglip(768, 256, "vit_base_patch16_siglip_256", 768, 12, 12),
  "ViT-B-16-SigLIP-384": _siglip(768, 384, "vit_base_patch16_siglip_384", 768, 12, 12),
  "ViT-B-16-SigLIP-512": _siglip(768, 512, "vit_base_patch16_siglip_512", 768, 12, 12),
  "ViT-L-16-SigLIP-256": _siglip(1024, 256, "vit_large_patch16_siglip_256", 1024, 16, 24),
  "ViT-L-16-SigLIP-384": _siglip(1024, 384, "vit_large_patch16_siglip_384", 1024, 16, 24),
  "ViT-SO400M-14-SigLIP": _siglip(
    1152, 224, "vit_so400m_patch14_siglip_224", 1152, 16, 27, context=16, mlp_ratio=3.7362
  ),
  "ViT-SO400M-14-SigLIP-384": _siglip(
    1152, 384, "vit_so400m_patch14_siglip_384", 1152, 16, 27, mlp_ratio=3.7362
  ),
}

#: timm's SigLIP trunks open_clip names (``timm.create_model(name)``'s ``VisionTransformer``
#: arguments): patch size, width, depth, heads, MLP ratio; no class token, LayerNorm
#: ε = 1e-6, exact GELU, the attention-pool (``map``) head.
TIMM_TRUNKS: dict[str, tuple[int, int, int, int, float]] = {
  **{
    f"vit_base_patch16_siglip_{size}": (16, 768, 12, 12, 4.0)
    for size in ("224", "256", "384", "512")
  },
  **{f"vit_large_patch16_siglip_{size}": (16, 1024, 24, 16, 4.0) for size in ("256", "384")},
  **{
    f"vit_so400m_patch14_siglip_{size}": (14, 1152, 27, 16, 3.7362)
    for size in ("224", "378", "384")
  },
}


@dataclasses.dataclass(frozen=True)
class Preprocessing:
  """How a pretrained tag's images are made: ``resize_mode`` ``"shortest"`` (the shorter
  side to the tower's size, then a centre crop) or ``"squash"`` (both sides to it, aspect
  ratio lost: SigLIP), ``interpolation``, then ``(x / 255 − mean) / std`` per RGB channel."""

  mean: tuple[float, float, float]
  std: tuple[float, float, float]
  interpolation: str
  resize_mode: str


OPENAI = Preprocessing(OPENAI_MEAN, OPENAI_STD, "bicubic", "shortest")
OPENAI_SQUASH = Preprocessing(OPENAI_MEAN, OPENAI_STD, "bicubic", "squash")
INCEPTION_SHORTEST = Preprocessing(INCEPTION_MEAN, INCEPTION_STD, "bicubic", "shortest")
SIGLIP = Preprocessing(INCEPTION_MEAN, INCEPTION_STD, "bicubic", "squash")

#: open_clip's pretrained tags of each config: ``{name: {tag: (preprocessing, quick_gelu)}}``
#: (``quick_gelu``: the weights were trained with QuickGELU, whatever the config says).
PRETRAINED_TAGS: dict[str, dict[str, tuple[Preprocessing, bool]]] = {
  "ViT-B-32": {
    "openai": (OPENAI, True),
    "laion400m_e31": (OPENAI, True),
    "laion400m_e32": (OPENAI, True),
    "laion2b_e16": (OPENAI, False),
    "laion2b_s34b_b79k": (OPENAI, False),
    "datacomp_xl_s13b_b90k": (OPENAI, False),
    "datacomp_m_s128m_b4k": (OPENAI, False),
    "commonpool_m_clip_s128m_b4k": (OPENAI, False),
    "commonpool_m_laion_s128m_b4k": (OPENAI, False),
    "commonpool_m_image_s128m_b4k": (OPENAI, False),
    "commonpool_m_text_s128m_b4k": (OPENAI, False),
    "commonpool_m_basic_s128m_b4k": (OPENAI, False),
    "commonpool_m_s128m_b4k": (OPENAI, False),
    "datacomp_s_s13m_b4k": (OPENAI, False),
    "commonpool_s_clip_s13m_b4k": (OPENAI, False),
    "commonpool_s_laion_s13m_b4k": (OPENAI, False),
    "commonpool_s_image_s13m_b4k": (OPENAI, False),
    "commonpool_s_text_s13m_b4k": (OPENAI, False),
    "commonpool_s_basic_s13m_b4k": (OPENAI, False),
    "commonpool_s_s13m_b4k": (OPENAI, False),
    "metaclip_400m": (OPENAI, True),
    "metaclip_fullcc": (OPENAI, True),
  },
  "ViT-B-32-quickgelu": {
    "openai": (OPENAI, True),
    "laion400m_e31": (OPENAI, True),
    "laion400m_e32": (OPENAI, True),
    "metaclip_400m": (OPENAI, True),
    "metaclip_fullcc": (OPENAI, True),
  },
  "ViT-B-16": {
    "openai": (OPENAI, True),
    "laion400m_e31": (OPENAI, False),
    "laion400m_e32": (OPENAI, False),
    "laion2b_s34b_b88k": (OPENAI, False),
    "datacomp_xl_s13b_b90k": (OPENAI, False),
    "datacomp_l_s1b_b8k": (OPENAI, False),
    "commonpool_l_clip_s1b_b8k": (OPENAI, False),
    "commonpool_l_laion_s1b_b8k": (OPENAI, False),
    "commonpool_l_image_s1b_b8k": (OPENAI, False),
    "commonpool_l_text_s1b_b8k": (OPENAI, False),
    "commonpool_l_basic_s1b_b8k": (OPENAI, False),
    "commonpool_l_s1b_b8k": (OPENAI, False),
    "dfn2b": (OPENAI, True),
    "metaclip_400m": (OPENAI, True),
    "metaclip_fullcc": (OPENAI, True),
  },
  "ViT-B-16-quickgelu": {
    "openai": (OPENAI, True),
    "dfn2b": (OPENAI, True),
    "metaclip_400m": (OPENAI, True),
    "metaclip_fullcc": (OPENAI, True),
  },
  "ViT-L-14": {
    "openai": (OPENAI, True),
    "laion400m_e31": (OPENAI, False),
    "laion400m_e32": (OPENAI, False),
    "laion2b_s32b_b82k": (INCEPTION_SHORTEST, False),
    "datacomp_xl_s13b_b90k": (OPENAI, False),
    "commonpool_xl_clip_s13b_b90k": (OPENAI, False),
    "commonpool_xl_laion_s13b_b90k": (OPENAI, False),
    "commonpool_xl_s13b_b90k": (OPENAI, False),
    "metaclip_400m": (OPENAI, True),
    "metaclip_fullcc": (OPENAI, True),
    "dfn2b": (OPENAI, True),
    "dfn2b_s39b": (OPENAI, False),
  },
  "ViT-L-14-quickgelu": {
    "openai": (OPENAI, True),
    "metaclip_400m": (OPENAI, True),
    "metaclip_fullcc": (OPENAI, True),
    "dfn2b": (OPENAI, True),
  },
  "ViT-L-14-336": {"openai": (OPENAI, True)},
  "ViT-H-14": {
    "laion2b_s32b_b79k": (OPENAI, False),
    "metaclip_fullcc": (OPENAI, True),
    "metaclip_altogether": (OPENAI, False),
    "dfn5b": (OPENAI_SQUASH, True),
  },
  "ViT-B-16-SigLIP": {"webli": (SIGLIP, False)},
  "ViT-B-16-SigLIP-256": {"webli": (SIGLIP, False)},
  "ViT-B-16-SigLIP-384": {"webli": (SIGLIP, False)},
  "ViT-B-16-SigLIP-512": {"webli": (SIGLIP, False)},
  "ViT-L-16-SigLIP-256": {"webli": (SIGLIP, False)},
  "ViT-L-16-SigLIP-384": {"webli": (SIGLIP, False)},
  "ViT-SO400M-14-SigLIP": {"webli": (SIGLIP, False)},
  "ViT-SO400M-14-SigLIP-384": {"webli": (SIGLIP, False)},
}
