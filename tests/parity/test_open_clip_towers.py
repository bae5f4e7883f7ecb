"""jitr's CLIP / SigLIP towers equal open_clip's own models (open_clip_torch 3.3.0, eval
mode) for the same random weights, through jitr's converter, and an exported state dict
loads in open_clip with the same embeddings. Runs in the environment
``.ci/open_clip_parity.sh`` makes (PyPI's torch, torchvision, open_clip_torch, timm)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import open_clip
import pytest
import torch

from jitr.models.clip import ClipModel, clip_config
from jitr.models.clip.open_clip_configs import OPEN_CLIP_CONFIGS
from jitr.models.clip.open_clip_names import open_clip_state_dict, params_from_open_clip
from jitr.models.clip.weights import export_open_clip, load_open_clip

pytestmark = pytest.mark.open_clip
SEED = 0


def _open_clip_model(name: str, layers: int | None):
  """open_clip's model of ``name`` in eval mode, random weights (its init, then every
  tensor jittered so that zero-initialised biases and norms are tested too), cut to
  ``layers`` blocks per tower when given."""
  torch.manual_seed(SEED)
  cfg = dict(OPEN_CLIP_CONFIGS[name])
  if layers is not None and "timm_model_name" not in cfg["vision_cfg"]:
    cfg["vision_cfg"] = {**cfg["vision_cfg"], "layers": layers}
  if layers is not None:
    cfg["text_cfg"] = {**cfg["text_cfg"], "layers": layers}
  cls = open_clip.CustomTextCLIP if cfg.get("custom_text") else open_clip.CLIP
  model = cls(**{k: v for k, v in cfg.items() if k != "custom_text"})
  if layers is not None and "timm_model_name" in cfg["vision_cfg"]:
    model.visual.trunk.blocks = model.visual.trunk.blocks[:layers]
  with torch.no_grad():
    for p in model.parameters():
      p.add_(0.02 * torch.randn_like(p))
  return model.eval()


def _inputs(config, n=3):
  rng = np.random.default_rng(SEED)
  size = config.vision.image_size
  images = rng.normal(size=(n, 3, size, size)).astype(np.float32)
  tokens = np.zeros((n, config.text.context_length), np.int64)
  for i, length in enumerate((5, 9, config.text.context_length)[:n]):
    tokens[i, :length] = rng.integers(1, config.text.vocab_size - 1, size=length)
    if config.text.pool == "argmax":
      tokens[i, length - 1] = config.text.vocab_size - 1  # the EOT, the highest id
  return images, tokens


def _ours(config, params, images, tokens, dtype=jnp.float32):
  model = ClipModel(config, dtype=dtype)
  variables = {"params": jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype), params)}
  nhwc = jnp.asarray(images.transpose(0, 2, 3, 1), dtype)
  u = model.apply(variables, nhwc, method=ClipModel.encode_image)
  v = model.apply(variables, jnp.asarray(tokens, jnp.int32), method=ClipModel.encode_text)
  return np.asarray(u, np.float64), np.asarray(v, np.float64)


def _theirs(model, images, tokens):
  with torch.no_grad():
    u = model.encode_image(torch.from_numpy(images))
    v = model.encode_text(torch.from_numpy(tokens))
  return u.double().numpy(), v.double().numpy()


def _config(name, layers):
  config = clip_config(name)
  return config if layers is None else config.reduced(layers)


@pytest.mark.parametrize(
  "name,layers",
  [
    ("ViT-B-32", 2),
    ("ViT-B-32-quickgelu", 2),
    ("ViT-B-16", 2),
    ("ViT-B-16-SigLIP", 2),
    ("ViT-B-32", None),
    ("ViT-B-32-quickgelu", None),
    ("ViT-B-16", None),
    ("ViT-B-16-SigLIP", None),
  ],
)
def test_towers_equal_open_clip_float32(name, layers):
  model = _open_clip_model(name, layers)
  config = _config(name, layers)
  params = params_from_open_clip(model.state_dict(), config)
  images, tokens = _inputs(config)
  ours, theirs = _ours(config, params, images, tokens), _theirs(model, images, tokens)
  for a, b in zip(ours, theirs, strict=True):
    np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)
  with torch.no_grad():
    scale = model.logit_scale.item()
  np.testing.assert_allclose(params["logit_scale"], scale, rtol=0)


@pytest.mark.parametrize("name", ["ViT-B-16", "ViT-B-16-SigLIP"])
def test_towers_equal_open_clip_float64(name):
  model = _open_clip_model(name, 2).double()
  config = _config(name, 2)
  params = params_from_open_clip(model.state_dict(), config)
  images, tokens = _inputs(config)
  with jax.enable_x64(True):
    ours = _ours(config, params, images.astype(np.float64), tokens, jnp.float64)
  theirs = _theirs(model, images.astype(np.float64), tokens)
  for a, b in zip(ours, theirs, strict=True):
    np.testing.assert_allclose(a, b, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize(
  "name,suffix", [("ViT-B-32-quickgelu", ".safetensors"), ("ViT-B-16-SigLIP", ".pt")]
)
def test_exported_state_dict_loads_in_open_clip(tmp_path, name, suffix):
  """jitr's own random params, exported, load in open_clip.create_model(name,
  pretrained=path) and give jitr's embeddings; jitr imports the file back unchanged."""
  config = clip_config(name)
  images, tokens = _inputs(config, 2)
  shapes_model = ClipModel(config)
  params = jax.jit(shapes_model.init)(
    jax.random.PRNGKey(1), jnp.zeros((1, *images.shape[2:], 3)), jnp.asarray(tokens[:1], jnp.int32)
  )["params"]
  params = jax.tree_util.tree_map(np.asarray, params)
  path = export_open_clip(params, config, tmp_path / f"model{suffix}")
  model = open_clip.create_model(name, pretrained=str(path)).eval()
  ours, theirs = _ours(config, params, images, tokens), _theirs(model, images, tokens)
  for a, b in zip(ours, theirs, strict=True):
    np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)
  back = load_open_clip(path, name)
  flat = lambda tree: jax.tree_util.tree_leaves_with_path(tree)
  for (pa, a), (pb, b) in zip(flat(back.params), flat(params), strict=True):
    assert pa == pb
    np.testing.assert_array_equal(a, b)
  assert set(open_clip_state_dict(params, config)) == set(model.state_dict())


@pytest.mark.parametrize(
  "name,tag,built_as,filename",
  [
    ("ViT-B-32", "openai", "ViT-B-32-quickgelu", "open_clip_pytorch_model.bin"),
    ("ViT-B-16-SigLIP", "webli", "ViT-B-16-SigLIP", "open_clip_model.safetensors"),
  ],
)
def test_files_open_clip_writes_import_as_documented(tmp_path, name, tag, built_as, filename):
  """The documented import of a hub download: open_clip's state dict saved the way the hub
  holds it (torch.save / safetensors), read by load_open_clip(path, name, tag=...). The
  openai tag brings QuickGELU although the ViT-B-32 config lacks it: jitr equals open_clip's
  ViT-B-32-quickgelu model."""
  from safetensors.torch import save_file

  model = _open_clip_model(built_as, None)
  path = tmp_path / filename
  if filename.endswith(".safetensors"):
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
  else:
    torch.save(model.state_dict(), path)
  imported = load_open_clip(path, name, tag=tag)
  assert imported.tag == tag and imported.config.text.act == (
    "quick_gelu" if tag == "openai" else "gelu"
  )
  images, tokens = _inputs(imported.config, 2)
  ours = _ours(imported.config, imported.params, images, tokens)
  for a, b in zip(ours, _theirs(model, images, tokens), strict=True):
    np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)
