"""CLIP / SigLIP weights from a user's files, and back to open_clip.

:func:`load_open_clip` reads an open_clip state dict (``open_clip_pytorch_model.bin`` or
``open_clip_model.safetensors`` as the Hugging Face hub's ``timm/...`` / ``laion/...``
repositories hold them, or a training checkpoint ``epoch_N.pt``) of a named open_clip
config; :func:`load_hf_clip` a Hugging Face ``CLIPModel`` folder (``config.json`` +
``model.safetensors``). Both give an :class:`ImportedClip`: the config, float32 params,
and what the pretrained weights expect of their inputs (the tag's preprocessing; the
activation they were trained with: QuickGELU for OpenAI's and some LAION / MetaCLIP tags,
which open_clip's config names do not always carry). :func:`export_open_clip` writes a
(fine-tuned) model as an open_clip state dict that ``open_clip.create_model(name,
pretrained=path)`` loads. Nothing is downloaded.
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitr import fileio, paths
from jitr.models.clip.config import ClipConfig, clip_config
from jitr.models.clip.open_clip_configs import OPENAI, PRETRAINED_TAGS, SIGLIP, Preprocessing
from jitr.models.clip.open_clip_names import open_clip_state_dict, params_from_open_clip
from jitr.models.state_files import read_state_file


@dataclasses.dataclass(frozen=True)
class ImportedClip:
  """An imported dual encoder: ``config`` (its activation that of the weights),
  ``params`` (float32 numpy, :class:`~jitr.models.ClipModel`'s tree), the images'
  ``preprocessing``, the ``source`` file and the pretrained ``tag`` (``""`` if unnamed)."""

  config: ClipConfig
  params: dict[str, Any]
  preprocessing: Preprocessing
  source: str
  tag: str


def pretrained_settings(model: str, tag: str) -> tuple[Preprocessing, bool]:
  """``(preprocessing, quick_gelu)`` of open_clip's pretrained ``tag`` of ``model``."""
  tags = PRETRAINED_TAGS.get(model, {})
  if tag not in tags:
    raise ValueError(f"pretrained tag {tag!r} of {model}: expected one of {sorted(tags)}")
  return tags[tag]


def load_open_clip(
  path: str | os.PathLike, model: str | Mapping[str, Any], *, tag: str = ""
) -> ImportedClip:
  """The open_clip weights in ``path`` as ``model``: a name of
  :data:`!jitr.models.clip.open_clip_configs.OPEN_CLIP_CONFIGS` or an open_clip model
  config dict (a ``model_configs/*.json`` read as JSON). ``tag`` (e.g. ``"openai"``,
  ``"laion2b_s34b_b88k"``, ``"webli"``; with a name) sets the preprocessing and the
  activation the weights were trained with; without it, the config's activation and SigLIP's
  preprocessing for a SigLIP tower (what its published weights were trained with; open_clip
  falls back to OpenAI's without a tag), OpenAI's otherwise."""
  path = os.fspath(path)
  config = clip_config(model)
  if tag:
    if not isinstance(model, str):
      raise ValueError(f"pretrained tag {tag!r}: a tag needs a model name, not a config dict")
    preprocessing, quick_gelu = pretrained_settings(model, tag)
    config = config.with_activation("quick_gelu" if quick_gelu else "gelu")
  else:
    preprocessing = SIGLIP if config.is_siglip else OPENAI
  state = read_state_file(path, f"an open_clip state dict of {config.name}")
  params = params_from_open_clip(state, config, source=path)
  return ImportedClip(config, params, preprocessing, path, tag)


def _hf_config(config: Mapping[str, Any], source: str) -> dict[str, Any]:
  """open_clip's model config of a Hugging Face ``CLIPConfig`` dict."""
  if config.get("model_type") != "clip":
    raise ValueError(f"{source}: model_type {config.get('model_type')!r}, expected 'clip'")
  v, t = config["vision_config"], config["text_config"]
  acts = {v.get("hidden_act", "quick_gelu"), t.get("hidden_act", "quick_gelu")}
  if not acts <= {"quick_gelu", "gelu"} or len(acts) != 1:
    raise ValueError(f"{source}: hidden_act {sorted(acts)}, expected one of quick_gelu, gelu")
  tower = lambda c: {
    "width": c["hidden_size"],
    "layers": c["num_hidden_layers"],
    "mlp_ratio": c["intermediate_size"] / c["hidden_size"],
    "norm_kwargs": {"eps": c.get("layer_norm_eps", 1e-5)},
  }
  vision = tower(v) | {"image_size": v["image_size"], "patch_size": v["patch_size"]}
  vision["head_width"] = v["hidden_size"] // v["num_attention_heads"]
  text = tower(t) | {"heads": t["num_attention_heads"], "vocab_size": t["vocab_size"]}
  text["context_length"] = t["max_position_embeddings"]
  return {
    "embed_dim": config["projection_dim"],
    "quick_gelu": acts == {"quick_gelu"},
    "vision_cfg": vision,
    "text_cfg": text,
  }


def _hf_to_open_clip(state: Mapping[str, Any], layers: tuple[int, int]) -> dict[str, Any]:
  """A Hugging Face CLIP state dict under open_clip's names (q, k, v stacked)."""
  out = {
    "visual.conv1.weight": state["vision_model.embeddings.patch_embedding.weight"],
    "visual.class_embedding": state["vision_model.embeddings.class_embedding"],
    "visual.positional_embedding": state["vision_model.embeddings.position_embedding.weight"],
    "visual.proj": np.asarray(state["visual_projection.weight"]).T,
    "token_embedding.weight": state["text_model.embeddings.token_embedding.weight"],
    "positional_embedding": state["text_model.embeddings.position_embedding.weight"],
    "text_projection": np.asarray(state["text_projection.weight"]).T,
    "logit_scale": state["logit_scale"],
  }
  norms = {
    "visual.ln_pre": "vision_model.pre_layrnorm",
    "visual.ln_post": "vision_model.post_layernorm",
  }
  norms["ln_final"] = "text_model.final_layer_norm"
  towers = (
    ("visual.transformer", "vision_model", layers[0]),
    ("transformer", "text_model", layers[1]),
  )
  for ours, theirs, n in towers:
    for i in range(n):
      p, q = f"{ours}.resblocks.{i}.", f"{theirs}.encoder.layers.{i}."
      for kind in ("weight", "bias"):
        stacked = [np.asarray(state[f"{q}self_attn.{x}_proj.{kind}"]) for x in "qkv"]
        out[f"{p}attn.in_proj_{kind}"] = np.concatenate(stacked)
      pairs = {"attn.out_proj": "self_attn.out_proj", "ln_1": "layer_norm1", "ln_2": "layer_norm2"}
      pairs |= {"mlp.c_fc": "mlp.fc1", "mlp.c_proj": "mlp.fc2"}
      norms |= {p + a: q + b for a, b in pairs.items()}
  for ours, theirs in norms.items():
    out[f"{ours}.weight"], out[f"{ours}.bias"] = state[f"{theirs}.weight"], state[f"{theirs}.bias"]
  return out


def hf_clip_config(folder: str | os.PathLike) -> ClipConfig:
  """The :class:`ClipConfig` of the Hugging Face ``CLIPModel`` folder's ``config.json``
  (one line naming the file when it is missing or not a ``CLIPConfig``)."""
  folder = os.fspath(folder)
  config_file = os.path.join(folder, "config.json")
  if not paths.isfile(config_file):
    raise FileNotFoundError(f"{folder}: no config.json (expected a Hugging Face CLIP folder)")
  hf = fileio.read_json(config_file)
  expected = "expected a Hugging Face CLIPConfig"
  if not isinstance(hf, Mapping):
    raise ValueError(f"{config_file}: holds a JSON {type(hf).__name__}, {expected}")
  try:
    model = _hf_config(hf, config_file)
  except KeyError as err:
    raise ValueError(f"{config_file}: no {err.args[0]!r} ({expected})") from None
  except (TypeError, AttributeError):
    raise ValueError(f"{config_file}: a field of another type ({expected})") from None
  return clip_config(model, name=hf.get("_name_or_path") or os.path.basename(folder.rstrip("/")))


def load_hf_clip(folder: str | os.PathLike) -> ImportedClip:
  """The Hugging Face ``CLIPModel`` saved in ``folder`` (``config.json`` and
  ``model.safetensors`` or ``pytorch_model.bin``), OpenAI's preprocessing."""
  folder = os.fspath(folder)
  config = hf_clip_config(folder)
  weights = os.path.join(folder, "model.safetensors")
  if not paths.isfile(weights):
    weights = os.path.join(folder, "pytorch_model.bin")
  state = read_state_file(weights, "a Hugging Face CLIPModel state dict")
  probe = "vision_model.embeddings.patch_embedding.weight"
  if probe not in state:
    raise ValueError(f"{weights}: not a Hugging Face CLIPModel state dict (no tensor {probe!r})")
  try:
    state = _hf_to_open_clip(state, (config.vision.layers, config.text.layers))
  except KeyError as err:
    raise ValueError(f"{weights}: missing tensor {err.args[0]!r} (config.json's sizes)") from None
  params = params_from_open_clip(state, config, source=weights)
  return ImportedClip(config, params, OPENAI, weights, "")


def export_open_clip(params: Mapping[str, Any], config: ClipConfig, path: str | os.PathLike) -> str:
  """Writes ``params`` as open_clip's state dict of ``config`` to ``path``:
  ``.safetensors`` (safetensors numpy), else a ``torch.save`` file of tensors. Returns the
  path."""
  path = os.fspath(path)
  state = open_clip_state_dict(params, config)
  if path.endswith(".safetensors"):
    from safetensors.numpy import save

    data = save(state)
  else:
    import torch

    buffer = io.BytesIO()
    torch.save({k: torch.from_numpy(v.copy()) for k, v in state.items()}, buffer)
    data = buffer.getvalue()
  fileio.write_bytes_atomic(path, data)
  return path
