"""jitr's copies of open_clip's tables equal open_clip's own: the model configs, the
pretrained tags' preprocessing and activation, the timm SigLIP trunks' shapes; and
info_nce / sigmoid_pairs equal open_clip's ClipLoss / SigLipLoss."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import open_clip
import pytest
import timm
import torch
from open_clip.pretrained import get_pretrained_cfg, list_pretrained_tags_by_model

from jitr.losses import info_nce, sigmoid_pairs
from jitr.models.clip import clip_config
from jitr.models.clip.open_clip_configs import OPEN_CLIP_CONFIGS, PRETRAINED_TAGS, TIMM_TRUNKS
from jitr.models.clip.open_clip_names import open_clip_shapes

pytestmark = pytest.mark.open_clip


def test_model_configs_are_open_clips():
  for name, config in OPEN_CLIP_CONFIGS.items():
    assert open_clip.get_model_config(name) == config, name


def test_pretrained_tags_are_open_clips():
  for name, tags in PRETRAINED_TAGS.items():
    assert sorted(list_pretrained_tags_by_model(name)) == sorted(tags), name
    for tag, (pre, quick_gelu) in tags.items():
      theirs = get_pretrained_cfg(name, tag)
      assert tuple(theirs["mean"]) == pre.mean and tuple(theirs["std"]) == pre.std, (name, tag)
      assert theirs["interpolation"] == pre.interpolation, (name, tag)
      assert theirs["resize_mode"] == pre.resize_mode, (name, tag)
      assert bool(theirs.get("quick_gelu", False)) == quick_gelu, (name, tag)


@pytest.mark.parametrize("trunk", sorted(TIMM_TRUNKS))
def test_timm_trunks_have_timms_tensors(trunk):
  """Every trunk of the table, built by timm on the meta device (no memory), has the
  tensor names and shapes jitr's converter expects of it."""
  cfg = dict(OPEN_CLIP_CONFIGS["ViT-B-16-SigLIP"])
  size = int(trunk.rsplit("_", 1)[1])
  cfg["vision_cfg"] = {**cfg["vision_cfg"], "timm_model_name": trunk, "image_size": size}
  with torch.device("meta"):
    model = timm.create_model(trunk, pretrained=False, num_classes=0, global_pool="map")
  theirs = {f"visual.trunk.{k}": tuple(v.shape) for k, v in model.state_dict().items()}
  shapes = open_clip_shapes(clip_config(cfg, name=trunk))
  assert {k: v for k, v in shapes.items() if k.startswith("visual.trunk.")} == theirs


def test_losses_equal_open_clips():
  from open_clip.loss import ClipLoss, SigLipLoss

  rng = np.random.default_rng(0)
  u = rng.normal(size=(6, 8)).astype(np.float32)
  v = rng.normal(size=(6, 8)).astype(np.float32)
  u /= np.linalg.norm(u, axis=1, keepdims=True)
  v /= np.linalg.norm(v, axis=1, keepdims=True)
  scale, bias = 12.5, -3.0
  tu, tv = torch.from_numpy(u), torch.from_numpy(v)
  clip = ClipLoss()(tu, tv, torch.tensor(scale))
  siglip = SigLipLoss()(tu, tv, torch.tensor(scale), torch.tensor(bias))
  sim = jnp.asarray(u @ v.T)
  np.testing.assert_allclose(info_nce(sim, logit_scale=scale), clip.item(), rtol=1e-6)
  np.testing.assert_allclose(
    sigmoid_pairs(sim, logit_scale=scale, logit_bias=bias), siglip.item(), rtol=1e-6
  )
