"""jitr's layer ranks give SigLIP's timm trunk the learning-rate scales timm's own
``param_groups_layer_decay`` (BEiT's recipe) gives it: every tensor of ``visual.trunk``,
mapped through jitr's open_clip names, learns at ``decay^rank`` = timm's ``lr_scale``.
Runs in the environment ``.ci/open_clip_parity.sh`` makes."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from timm.optim import param_groups_layer_decay

from jitr.models.clip.layer_ranks import layer_ranks
from jitr.models.clip.open_clip_names import open_clip_state_dict, params_from_open_clip
from tests.parity.test_open_clip_towers import _config, _open_clip_model

pytestmark = pytest.mark.open_clip
DECAY = 0.5
TRUNK = "visual.trunk."


@pytest.mark.parametrize("layers", [2, None])
def test_layer_ranks_give_the_siglip_trunk_timms_lr_scales(layers):
  model = _open_clip_model("ViT-B-16-SigLIP", layers)
  config = _config("ViT-B-16-SigLIP", layers)
  params = params_from_open_clip(model.state_dict(), config)
  ranks = layer_ranks(params)
  filled = jax.tree.map(lambda r, p: np.full(np.shape(p), r, np.float32), ranks, params)
  ours = {}
  for name, value in open_clip_state_dict(filled, config).items():
    if name.startswith(TRUNK):
      assert value.min() == value.max(), name  # one rank per tensor
      ours[name.removeprefix(TRUNK)] = DECAY ** float(value.flat[0])
  groups = param_groups_layer_decay(model.visual.trunk, weight_decay=0.0, layer_decay=DECAY)
  names = {id(p): n for n, p in model.visual.trunk.named_parameters()}
  theirs = {names[id(p)]: group["lr_scale"] for group in groups for p in group["params"]}
  assert set(ours) == set(theirs)
  depth = config.vision.layers
  assert min(theirs.values()) == pytest.approx(DECAY ** (depth + 1))  # the stem
  for name, scale in theirs.items():
    assert ours[name] == pytest.approx(scale, rel=1e-12), name
