"""Weights in and out: open_clip state dicts (both naming schemes) through jitr's name table
and files, and the one-line refusals. (Loading in open_clip itself, and Hugging Face CLIP
folders against transformers' own CLIPModel: tests/parity.)"""

from __future__ import annotations

import os

import jax
import numpy as np
import pytest
import torch

from jitr.models.clip.open_clip_names import open_clip_state_dict, params_from_open_clip
from jitr.models.clip.weights import export_open_clip, load_hf_clip, load_open_clip
from tests.models.clip.tiny_clip import TINY, random_params, tiny_clip, tiny_siglip


def _assert_trees_equal(a, b):
  flat_a, flat_b = jax.tree_util.tree_leaves_with_path(a), jax.tree_util.tree_leaves_with_path(b)
  assert [p for p, _ in flat_a] == [p for p, _ in flat_b]
  for (_, x), (_, y) in zip(flat_a, flat_b, strict=True):
    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("make", [tiny_clip, tiny_siglip])
def test_state_dict_round_trip(make):
  config = make()
  params = random_params(config)
  state = open_clip_state_dict(params, config)
  _assert_trees_equal(params_from_open_clip(state, config), params)
  if config.is_siglip:
    w = config.vision.width
    assert state["visual.trunk.patch_embed.proj.weight"].shape == (w, 3, 8, 8)
    assert state["visual.trunk.pos_embed"].shape == (1, 16, w)
    assert state["visual.trunk.attn_pool.kv.weight"].shape == (2 * w, w)
    assert state["text.text_projection.weight"].shape == (config.embed_dim, config.text.width)
    assert "text.text_projection.bias" in state and "logit_bias" in state
  else:
    assert state["visual.conv1.weight"].shape == (32, 3, 8, 8)
    assert state["transformer.resblocks.1.attn.in_proj_weight"].shape == (96, 32)
    assert state["text_projection"].shape == (32, 16) and state["visual.proj"].shape == (32, 16)
    np.testing.assert_array_equal(state["visual.proj"], params["visual"]["projection"]["kernel"])
    assert "logit_bias" not in state


@pytest.mark.parametrize("suffix", [".safetensors", ".pt"])
def test_exported_files_load_back(tmp_path, suffix):
  config = tiny_clip()
  params = random_params(config)
  path = export_open_clip(params, config, tmp_path / "out" / f"tiny{suffix}")
  state = torch.load(path, weights_only=True) if suffix == ".pt" else None
  if state is not None:
    assert state["visual.conv1.weight"].dtype == torch.float32
  imported = load_open_clip_tiny(path, config)
  _assert_trees_equal(imported, params)


def load_open_clip_tiny(path, config):
  from jitr.models.state_files import read_state_file

  return params_from_open_clip(
    read_state_file(os.fspath(path), "x"), config, source=os.fspath(path)
  )


def test_training_checkpoints_are_unwrapped(tmp_path):
  """open_clip's epoch_N.pt: {"epoch", "state_dict": {"module.<name>": ...}, ...}."""
  config = tiny_clip()
  params = random_params(config)
  state = {
    f"module.{k}": torch.from_numpy(v) for k, v in open_clip_state_dict(params, config).items()
  }
  torch.save({"epoch": 3, "name": "run", "state_dict": state}, tmp_path / "epoch_3.pt")
  _assert_trees_equal(load_open_clip_tiny(tmp_path / "epoch_3.pt", config), params)


def test_another_architecture_or_size_is_one_line(tmp_path):
  siglip, clip = tiny_siglip(), tiny_clip()
  state = open_clip_state_dict(random_params(siglip), siglip)
  with pytest.raises(
    ValueError,
    match=r"^f: a SigLIP \(timm trunk\) state dict, not tiny-clip "
    r"\(no tensor 'visual\.conv1\.weight'\)$",
  ):
    params_from_open_clip(state, clip, source="f")
  path = export_open_clip(random_params(clip), clip, tmp_path / "tiny.safetensors")
  with pytest.raises(
    ValueError,
    match=r"tiny\.safetensors: tensor 'visual\.conv1\.weight' has shape \(32, 3, 8, 8\), "
    r"ViT-B-32 gives \(768, 3, 32, 32\)$",
  ):
    load_open_clip(path, "ViT-B-32")
  state = open_clip_state_dict(random_params(clip), clip)
  state["visual.transformer.resblocks.2.ln_1.weight"] = np.ones(32, np.float32)
  with pytest.raises(
    ValueError,
    match=r"^f: unexpected tensor 'visual\.transformer\.resblocks\.2\.ln_1\.weight' for "
    r"tiny-clip \(2 image and 2 text blocks\)",
  ):
    params_from_open_clip(state, clip, source="f")
  del state["visual.transformer.resblocks.2.ln_1.weight"], state["ln_final.bias"]
  with pytest.raises(ValueError, match=r"^f: missing tensor 'ln_final\.bias' \(tiny-clip\)$"):
    params_from_open_clip(state, clip, source="f")
  torch.save({"weights": os.getcwd}, tmp_path / "code.pt")
  with pytest.raises(
    ValueError, match=r"code\.pt: not a weights-only PyTorch state dict \(it holds 'posix\.getcwd'"
  ):
    load_open_clip(tmp_path / "code.pt", "ViT-B-32")


def test_a_tag_records_preprocessing_and_activation(tmp_path, monkeypatch):
  """A tag trained with QuickGELU gets it whatever the config says; no tag: the config's
  activation and open_clip's default preprocessing of the kind."""
  from jitr.models.clip import open_clip_configs as tables

  monkeypatch.setitem(tables.OPEN_CLIP_CONFIGS, "tiny", TINY)
  tags = {"old": (tables.OPENAI, True), "new": (tables.INCEPTION_SHORTEST, False)}
  monkeypatch.setitem(tables.PRETRAINED_TAGS, "tiny", tags)
  config = tiny_clip()
  path = export_open_clip(random_params(config), config, tmp_path / "tiny.safetensors")
  old, new, plain = (load_open_clip(path, "tiny", tag=tag) for tag in ("old", "new", ""))
  assert (old.config.vision.act, old.config.text.act, old.preprocessing, old.tag) == (
    "quick_gelu",
    "quick_gelu",
    tables.OPENAI,
    "old",
  )
  assert (new.config.text.act, new.preprocessing) == ("gelu", tables.INCEPTION_SHORTEST)
  assert (plain.config.text.act, plain.preprocessing, plain.source) == (
    "gelu",
    tables.OPENAI,
    str(path),
  )
  _assert_trees_equal(old.params, new.params)
  with pytest.raises(
    ValueError, match=r"^pretrained tag 'webli' of tiny: expected one of \['new', 'old'\]$"
  ):
    load_open_clip(path, "tiny", tag="webli")


def test_hugging_face_folder_faults_are_one_line(tmp_path):
  with pytest.raises(
    FileNotFoundError, match=r"no config\.json \(expected a Hugging Face CLIP folder\)$"
  ):
    load_hf_clip(tmp_path)
  (tmp_path / "config.json").write_text('{"model_type": "siglip"}')
  with pytest.raises(ValueError, match=r"config\.json: model_type 'siglip', expected 'clip'$"):
    load_hf_clip(tmp_path)
  (tmp_path / "config.json").write_text('{"model_type": "clip", "text_config": {}}')
  with pytest.raises(
    ValueError, match=r"config\.json: no 'vision_config' \(expected a Hugging Face CLIPConfig\)$"
  ):
    load_hf_clip(tmp_path)
