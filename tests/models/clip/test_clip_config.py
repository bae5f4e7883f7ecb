"""open_clip's model configs read as jitr's towers, and what jitr does not build refused."""

from __future__ import annotations

import pytest

from jitr.models.clip import clip_config
from jitr.models.clip.open_clip_configs import OPEN_CLIP_CONFIGS, PRETRAINED_TAGS, SIGLIP
from jitr.models.clip.weights import pretrained_settings


def test_every_config_reads():
  for name in OPEN_CLIP_CONFIGS:
    config = clip_config(name)
    assert config.name == name
    assert config.vision.width % config.vision.heads == 0
    assert config.text.width % config.text.heads == 0


def test_vit_b_16_and_siglip_shapes():
  clip = clip_config("ViT-B-16")
  assert (clip.vision.trunk, clip.vision.grid, clip.vision.heads, clip.vision.mlp_width) == (
    "open_clip",
    14,
    12,
    3072,
  )
  assert (clip.text.causal, clip.text.pool, clip.text.proj_bias, clip.text.norm_eps) == (
    True,
    "argmax",
    False,
    1e-5,
  )
  assert clip.vision.act == clip.text.act == "gelu" and clip.init_logit_bias is None
  assert clip_config("ViT-B-16-quickgelu").text.act == "quick_gelu"
  siglip = clip_config("ViT-B-16-SigLIP")
  assert (siglip.vision.trunk, siglip.vision.norm_eps, siglip.vision.act) == ("timm", 1e-6, "gelu")
  assert (siglip.text.causal, siglip.text.pool, siglip.text.proj_bias) == (False, "last", True)
  assert siglip.init_logit_bias == -10 and siglip.custom_text
  assert clip_config("ViT-H-14").vision.heads == 16  # width 1280 / head_width 80
  assert clip_config("ViT-SO400M-14-SigLIP").text.mlp_width == 4304  # int(1152 * 3.7362)


def test_a_tag_sets_the_activation_it_was_trained_with():
  pre, quick = pretrained_settings("ViT-B-16", "openai")
  assert quick and pre.resize_mode == "shortest" and pre.mean[0] == 0.48145466
  assert not pretrained_settings("ViT-B-16", "laion2b_s34b_b88k")[1]
  assert pretrained_settings("ViT-B-16-SigLIP", "webli") == (SIGLIP, False)
  assert all(len(tags) for tags in PRETRAINED_TAGS.values())
  with pytest.raises(ValueError, match=r"^pretrained tag 'webli' of ViT-B-16: expected one of \["):
    pretrained_settings("ViT-B-16", "webli")


@pytest.mark.parametrize(
  "change,message",
  [
    (
      {"vision_cfg": {"layers": [3, 4, 6, 3]}},
      r"^x\.vision_cfg\.layers = \[3, 4, 6, 3\]: expected an int \(a ViT; ResNets",
    ),
    (
      {"vision_cfg": {"attentional_pool": True}},
      r"^x\.vision_cfg\.attentional_pool = True: jitr's towers build only "
      r"attentional_pool = False$",
    ),
    (
      {"text_cfg": {"hf_model_name": "roberta-base"}},
      r"^x\.text_cfg\.hf_model_name = 'roberta-base': jitr's towers build only",
    ),
    (
      {"text_cfg": {"pool_type": "eos"}},
      r"^x\.text_cfg\.pool_type = 'eos': expected 'argmax' or 'last'$",
    ),
    (
      {
        "vision_cfg": {
          "timm_model_name": "vit_base_patch16_224",
          "timm_pool": "map",
          "timm_proj": "none",
        }
      },
      r"^x\.vision_cfg\.timm_model_name = 'vit_base_patch16_224': expected one of the "
      r"SigLIP trunks",
    ),
    ({"vision_cfg": None}, r"^x: no vision_cfg object \(expected an open_clip model config\)$"),
  ],
)
def test_what_jitr_does_not_build_is_one_line(change, message):
  model = dict(OPEN_CLIP_CONFIGS["ViT-B-32"])
  for key, value in change.items():
    model[key] = None if value is None else {**model[key], **value}
  with pytest.raises(ValueError, match=message):
    clip_config(model, name="x")


def test_a_config_without_embed_dim_is_one_line():
  model = {k: v for k, v in OPEN_CLIP_CONFIGS["ViT-B-32"].items() if k != "embed_dim"}
  with pytest.raises(ValueError, match=r"^x: embed_dim = None, expected an int$"):
    clip_config(model, name="x")


def test_unknown_name():
  with pytest.raises(ValueError, match=r"^model 'ViT-Q-9': expected one of \['ViT-B-16', "):
    clip_config("ViT-Q-9")
