"""open_clip's state-dict names of a :class:`~jitr.models.ClipModel`'s params, both ways.

One table per config (:func:`open_clip_names`) gives each tensor's open_clip name, its path
in jitr's params and how it is laid out: ``"linear"`` (a torch Linear ``weight [out, in]``
is a Dense ``kernel [in, out]``), ``"conv"`` (``[W, 3, p, p]`` is ``[p, p, 3, W]``),
``"lead1"`` (timm's ``pos_embed [1, N, W]`` is ``[N, W]``) or ``"same"``.
:func:`params_from_open_clip` reads a state dict through it (names and shapes checked
against the config, one line for the first difference) and :func:`open_clip_state_dict`
writes params back, so an exported tower loads in open_clip.

Names, CLIP (``custom_text`` false: the text tower at the top level; SigLIP: under
``text.``, its projection a Linear with bias ``text_projection.{weight,bias}``)::

    token_embedding.weight, positional_embedding, ln_final.*, text_projection [W, E]
    transformer.resblocks.{i}.{ln_1, attn.in_proj_{weight,bias}, attn.out_proj, ln_2,
                               mlp.c_fc, mlp.c_proj}
    visual.{conv1.weight, class_embedding, positional_embedding, ln_pre, transformer.*,
            ln_post, proj [W, E]}
    visual.trunk.{patch_embed.proj, pos_embed, blocks.{i}.{norm1, attn.qkv, attn.proj,
                  norm2, mlp.fc1, mlp.fc2}, norm, attn_pool.{latent, q, kv, proj, norm,
                  mlp.fc1, mlp.fc2}}                                  (SigLIP's timm trunk)
    logit_scale, logit_bias
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jitr.models.clip.config import ClipConfig
from jitr.models.clip.model import ClipModel
from jitr.models.state_files import as_numpy

#: Keys of OpenAI's checkpoints that are not weights (open_clip drops them too).
IGNORED = ("input_resolution", "context_length", "vocab_size", "attn_mask", "visual.attn_mask")


@dataclasses.dataclass(frozen=True)
class Name:
  """One tensor: open_clip's ``name``, jitr's param ``path``, the ``layout`` between them."""

  name: str
  path: tuple[str, ...]
  layout: str


#: The axes of jitr's array in the torch tensor, and back, of each transposed layout.
_AXES = {"linear": ((1, 0), (1, 0)), "conv": ((2, 3, 1, 0), (3, 2, 0, 1))}


def _relayout(array: np.ndarray, layout: str, *, to_torch: bool) -> np.ndarray:
  """``array`` from open_clip's layout to jitr's (``to_torch=False``) or back."""
  if layout == "lead1":
    return array[None] if to_torch else array[0]
  if layout in _AXES:
    return array.transpose(_AXES[layout][to_torch])
  return array


def _norm(name: str, path: tuple[str, ...]) -> list[Name]:
  return [
    Name(f"{name}.weight", (*path, "scale"), "same"),
    Name(f"{name}.bias", (*path, "bias"), "same"),
  ]


def _linear(name: str, path: tuple[str, ...], bias: bool = True) -> list[Name]:
  names = [Name(f"{name}.weight", (*path, "kernel"), "linear")]
  return names + ([Name(f"{name}.bias", (*path, "bias"), "same")] if bias else [])


def _blocks(prefix: str, path: tuple[str, ...], layers: int, timm: bool) -> list[Name]:
  """The pre-LN blocks of open_clip's ``Transformer`` (``resblocks``) or timm's ``blocks``."""
  names = []
  for i in range(layers):
    p, q = (f"{prefix}blocks.{i}." if timm else f"{prefix}resblocks.{i}."), (*path, f"block_{i}")
    if timm:
      parts = [("norm1", "norm1"), ("attn.qkv", "qkv"), ("attn.proj", "out"), ("norm2", "norm2")]
      parts += [("mlp.fc1", "fc1"), ("mlp.fc2", "fc2")]
    else:
      parts = [("ln_1", "norm1"), ("attn.out_proj", "out"), ("ln_2", "norm2")]
      parts += [("mlp.c_fc", "fc1"), ("mlp.c_proj", "fc2")]
      names.append(Name(f"{p}attn.in_proj_weight", (*q, "attn", "qkv", "kernel"), "linear"))
      names.append(Name(f"{p}attn.in_proj_bias", (*q, "attn", "qkv", "bias"), "same"))
    for theirs, ours in parts:
      sub = {"qkv": ("attn", "qkv"), "out": ("attn", "out"), "fc1": ("mlp", "fc1")}
      sub["fc2"] = ("mlp", "fc2")
      target = (*q, *sub.get(ours, (ours,)))
      names += _norm(p + theirs, target) if ours.startswith("norm") else _linear(p + theirs, target)
  return names


def _vision_names(config: ClipConfig) -> list[Name]:
  v, path = config.vision, ("visual",)
  if v.trunk == "timm":
    t = "visual.trunk."
    names = [
      Name(f"{t}patch_embed.proj.weight", (*path, "patch_embed", "kernel"), "conv"),
      Name(f"{t}patch_embed.proj.bias", (*path, "patch_embed", "bias"), "same"),
      Name(f"{t}pos_embed", (*path, "pos_embed"), "lead1"),
    ]
    names += _blocks(t, (*path, "transformer"), v.layers, timm=True)
    names += _norm(f"{t}norm", (*path, "norm"))
    head, a = (*path, "map_head"), f"{t}attn_pool."
    names.append(Name(f"{a}latent", (*head, "latent"), "same"))
    for theirs, ours in (("q", ("q",)), ("kv", ("kv",)), ("proj", ("out",))):
      names += _linear(a + theirs, (*head, *ours))
    names += _norm(f"{a}norm", (*head, "norm"))
    names += _linear(f"{a}mlp.fc1", (*head, "mlp", "fc1")) + _linear(
      f"{a}mlp.fc2", (*head, "mlp", "fc2")
    )
    return names
  names = [
    Name("visual.conv1.weight", (*path, "patch_embed", "kernel"), "conv"),
    Name("visual.class_embedding", (*path, "class_embedding"), "same"),
    Name("visual.positional_embedding", (*path, "pos_embed"), "same"),
  ]
  names += _norm("visual.ln_pre", (*path, "ln_pre"))
  names += _blocks("visual.transformer.", (*path, "transformer"), v.layers, timm=False)
  names += _norm("visual.ln_post", (*path, "ln_post"))
  return names + [Name("visual.proj", (*path, "projection", "kernel"), "same")]


def _text_names(config: ClipConfig) -> list[Name]:
  t, path = ("text." if config.custom_text else ""), ("text",)
  names = [
    Name(f"{t}token_embedding.weight", (*path, "token_embedding", "embedding"), "same"),
    Name(f"{t}positional_embedding", (*path, "pos_embed"), "same"),
  ]
  names += _blocks(f"{t}transformer.", (*path, "transformer"), config.text.layers, timm=False)
  names += _norm(f"{t}ln_final", (*path, "ln_final"))
  if config.text.proj_bias:
    return names + _linear(f"{t}text_projection", (*path, "projection"))
  return names + [Name(f"{t}text_projection", (*path, "projection", "kernel"), "same")]


def open_clip_names(config: ClipConfig) -> list[Name]:
  """Every tensor of ``config``'s open_clip model, in open_clip's order of towers."""
  names = (
    _vision_names(config) + _text_names(config) + [Name("logit_scale", ("logit_scale",), "same")]
  )
  if config.learns_bias:
    names.append(Name("logit_bias", ("logit_bias",), "same"))
  return names


def param_shapes(config: ClipConfig) -> dict[str, Any]:
  """The params' shapes and dtypes (``jax.eval_shape`` of an init: nothing is computed)."""
  size, length = config.vision.image_size, config.text.context_length
  images = jax.ShapeDtypeStruct((1, size, size, 3), jnp.float32)
  tokens = jax.ShapeDtypeStruct((1, length), jnp.int32)
  shapes = jax.eval_shape(ClipModel(config).init, jax.random.PRNGKey(0), images, tokens)
  return shapes["params"]


def open_clip_shapes(config: ClipConfig) -> dict[str, tuple[int, ...]]:
  """Every open_clip tensor name of ``config`` -> the shape open_clip gives it."""
  shapes = param_shapes(config)
  empty = lambda n: np.empty(_at(shapes, n.path).shape, np.int8)
  return {
    n.name: _relayout(empty(n), n.layout, to_torch=True).shape for n in open_clip_names(config)
  }


def _at(tree: Mapping[str, Any], path: tuple[str, ...]) -> Any:
  for key in path:
    tree = tree[key]
  return tree


def _architecture(state: Mapping[str, Any], config: ClipConfig, source: str) -> None:
  """One line when ``state`` is not an open_clip model of ``config``'s kind."""
  probe = open_clip_names(config)[0].name
  if probe in state:
    return
  kinds = {
    "visual.trunk.patch_embed.proj.weight": "a SigLIP (timm trunk) state dict",
    "visual.conv1.weight": "an open_clip CLIP ViT state dict",
    "vision_model.embeddings.patch_embedding.weight": "a Hugging Face CLIP state dict",
    "module.visual.conv1.weight": "a training checkpoint's state dict (module. prefix)",
  }
  found = next((kind for key, kind in kinds.items() if key in state), None)
  if found is None:
    some = ", ".join(sorted(state)[:3]) or "no tensors"
    found = f"another architecture ({some}, ...)"
  raise ValueError(f"{source}: {found}, not {config.name} (no tensor {probe!r})")


def params_from_open_clip(
  state: Mapping[str, Any], config: ClipConfig, *, source: str = "open_clip state dict"
) -> dict[str, Any]:
  """:class:`~jitr.models.ClipModel` params (float32 numpy) from an open_clip state
  dict of ``config`` (torch tensors or arrays); ``source`` starts every error line."""
  _architecture(state, config, source)
  names = open_clip_names(config)
  known = {n.name for n in names}
  extra = sorted(k for k in state if k not in known and k not in IGNORED)
  if extra:
    raise ValueError(
      f"{source}: unexpected tensor {extra[0]!r} for {config.name} ({config.vision.layers} image "
      f"and {config.text.layers} text blocks): another architecture or size"
    )
  shapes, params = open_clip_shapes(config), {}
  for n in names:
    if n.name not in state:
      raise ValueError(f"{source}: missing tensor {n.name!r} ({config.name})")
    array, want = as_numpy(state[n.name]), shapes[n.name]
    if want == () and array.shape == (1,):  # a scalar saved as [1] (safetensors, nonscalar)
      array = array.reshape(())
    if array.shape != want:
      raise ValueError(
        f"{source}: tensor {n.name!r} has shape {array.shape}, {config.name} gives {want}"
      )
    if not np.issubdtype(array.dtype, np.floating) or not np.all(np.isfinite(array)):
      raise ValueError(f"{source}: tensor {n.name!r} is not finite floating point ({array.dtype})")
    node = params
    for key in n.path[:-1]:
      node = node.setdefault(key, {})
    node[n.path[-1]] = _relayout(array, n.layout, to_torch=False).astype(np.float32)
  return params


def open_clip_state_dict(params: Mapping[str, Any], config: ClipConfig) -> dict[str, np.ndarray]:
  """open_clip's state dict (float32 numpy, contiguous) of ``config``'s ``params``."""
  return {
    n.name: np.ascontiguousarray(
      _relayout(np.asarray(_at(params, n.path), np.float32), n.layout, to_torch=True)
    )
    for n in open_clip_names(config)
  }
