"""CLIP / SigLIP behind the one :class:`~jitr.models.RetrievalModel` interface, and the
registry's entry for ``"clip"``.

The batch's ``images`` are a tower's inputs ``[B, S, S, 3]`` (an image folder's pixels,
:class:`!jitr.data.image_files.ImageFiles`) and its ``tokens`` the text tower's ids
(:class:`!jitr.data.tower_text_vocab.TowerTextVocab`): a causal tower's (CLIP's) may be
cut to the batch's longest caption (its embedding is the same), a tower without the mask
(SigLIP, which pools the last position) takes the whole context length.

``forward`` gives the unit embeddings; the objective's terms set to
``"learned"`` read the model's ``logit_scale`` ``t = exp(min(max(s, 0), ln 100))`` (open_clip
clamps ``s`` to ``[0, ln 100]`` after every step; here the value is clamped, the parameter
is not) and, for SigLIP, ``logit_bias``.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

from jitr import fileio, paths
from jitr.losses.normalize import l2_normalize
from jitr.models.clip.config import ClipConfig, clip_config
from jitr.models.clip.layer_ranks import layer_ranks
from jitr.models.clip.model import ClipModel
from jitr.models.clip.open_clip_configs import OPENAI, SIGLIP, Preprocessing
from jitr.models.clip.weights import (
  hf_clip_config,
  load_hf_clip,
  load_open_clip,
  pretrained_settings,
)
from jitr.models.dual_encoder import dual_encoder
from jitr.models.retrieval_model import ModelOutput, Network, RetrievalModel

#: The batch keys the towers read.
CLIP_INPUTS = ("images", "tokens")
#: The largest temperature open_clip lets ``exp(logit_scale)`` reach.
MAX_LOGIT_SCALE = 100.0


@dataclasses.dataclass(frozen=True)
class ClipSettings:
  """The ``"clip"`` network's settings (``config.model``).

  ``tower``: an open_clip model name (:data:`!jitr.models.clip.open_clip_configs.OPEN_CLIP_CONFIGS`,
  e.g. ``"ViT-B-16"``, ``"ViT-B-16-SigLIP"``), the path of an open_clip model config
  ``.json``, or such a model config itself (an object: ``embed_dim``, ``vision_cfg``,
  ``text_cfg``, optionally ``init_logit_bias``: a tower of CLIP's BPE that learns SigLIP's
  bias). ``weights``: the weights it starts from, an open_clip state dict
  (``.pt``, ``.bin``, ``.safetensors``) or a Hugging Face ``CLIPModel`` folder (whose
  ``config.json`` then shapes the towers); ``""``: open_clip's random initialisation.
  ``tag``: the open_clip pretrained tag of the weights (``"openai"``, ``"laion2b_s34b_b88k"``,
  ``"webli"``): their activation and image preprocessing. ``tokenizer``: ``""`` for CLIP's
  BPE, else a Hugging Face tokenizer folder (``tokenizer.json``; SigLIP's).
  ``max_layers``: at most this many blocks per tower (0: all; small runs and tests).
  ``dtype``: the matmuls' dtype (``"bfloat16"``); ``remat``: recompute each block in the
  backward pass.
  """

  tower: str | Mapping[str, Any] = "ViT-B-16"
  weights: str = ""
  tag: str = ""
  tokenizer: str = ""
  max_layers: int = 0
  dtype: Any = jnp.float32
  remat: bool = False


@dataclasses.dataclass(frozen=True)
class TowerInputs:
  """What a run's data must give the towers: ``image_size`` pixels made as
  ``preprocessing`` says, captions of ``context_length`` ids of ``vocab_size`` by
  ``tokenizer`` (``""``: CLIP's BPE), ``causal`` (a causal text tower)."""

  image_size: int
  preprocessing: Preprocessing
  context_length: int
  vocab_size: int
  tokenizer: str
  causal: bool


def _open_clip_model(tower: str | Mapping[str, Any]) -> str | Mapping[str, Any]:
  """``tower`` as :func:`~jitr.models.clip_config` and :func:`~jitr.models.load_open_clip`
  take it: an open_clip name, or the model config given or held by a ``.json`` file."""
  if isinstance(tower, Mapping):
    return tower
  if not tower.endswith(".json"):
    return tower
  model = fileio.read_json(tower)
  if not isinstance(model, Mapping):
    raise ValueError(f"{tower}: expected an open_clip model config object")
  return model


def _tower_config(settings: ClipSettings) -> ClipConfig:
  """The towers' config: the weights' Hugging Face folder's, else ``tower``'s, with the
  tag's activation and at most ``max_layers`` blocks."""
  weights, tower = settings.weights, settings.tower
  if weights and paths.isdir(weights):
    config = hf_clip_config(weights)
  else:
    config = clip_config(_open_clip_model(tower), name=_tower_name(tower))
  if settings.tag:
    _, quick_gelu = pretrained_settings(config.name, settings.tag)
    config = config.with_activation("quick_gelu" if quick_gelu else "gelu")
  return config.reduced(settings.max_layers) if settings.max_layers else config


def _tower_name(tower: str | Mapping[str, Any]) -> str | None:
  """The name a tower config is known by: a ``.json`` file's stem, ``config.model.tower``
  for one given inline (its errors then name the field), else ``None`` (open_clip's name)."""
  if isinstance(tower, Mapping):
    return "config.model.tower"
  return os.path.basename(tower).removesuffix(".json") if tower.endswith(".json") else None


def preprocessing_of(settings: ClipSettings, config: ClipConfig) -> Preprocessing:
  """The tag's preprocessing; without a tag SigLIP's for a SigLIP tower (what its published
  weights were trained with; open_clip itself falls back to OpenAI's), OpenAI's otherwise."""
  if settings.tag:
    return pretrained_settings(config.name, settings.tag)[0]
  return SIGLIP if config.is_siglip else OPENAI


def tower_inputs(config: Mapping[str, Any]) -> TowerInputs:
  """The :class:`TowerInputs` of a ``"clip"`` model config (``name`` ignored)."""
  settings = ClipSettings(**{k: v for k, v in dict(config).items() if k != "name"})
  tower = _tower_config(settings)
  if tower.text.hf_tokenizer and not settings.tokenizer:
    raise ValueError(
      f"config.model.tokenizer: the text tower of {tower.name} reads the ids of "
      f"{tower.text.hf_tokenizer}: needs its tokenizer folder (tokenizer.json), not CLIP's BPE"
    )
  return TowerInputs(
    tower.vision.image_size,
    preprocessing_of(settings, tower),
    tower.text.context_length,
    tower.text.vocab_size,
    settings.tokenizer,
    tower.text.causal,
  )


def _weights(settings: ClipSettings, config: ClipConfig) -> Any | None:
  """The params of ``settings.weights`` (``None`` without), refused unless they fit."""
  if not settings.weights:
    return None
  try:
    if paths.isdir(settings.weights):
      imported = load_hf_clip(settings.weights)
    else:
      model = _open_clip_model(settings.tower)
      imported = load_open_clip(settings.weights, model, tag=settings.tag)
  except (OSError, ValueError) as err:
    raise ValueError(f"config.model.weights: {err}") from None
  params = imported.params
  if settings.max_layers:  # a reduced tower keeps the first blocks
    want = jax.eval_shape(lambda: _init(ClipModel(config), jax.random.key(0)))
    params = _first_blocks(params, want)
  return params


def _init(module: ClipModel, key: jax.Array) -> dict:
  size = module.config.vision.image_size
  images = jnp.zeros((1, size, size, 3), jnp.float32)
  tokens = jnp.zeros((1, module.config.text.context_length), jnp.int32)
  return module.init(key, images, tokens)["params"]


def _first_blocks(params: Any, want: Any) -> Any:
  """``params`` with only the subtrees ``want`` has (a reduced tower's blocks)."""
  if not isinstance(want, Mapping):
    return params
  return {k: _first_blocks(params[k], v) for k, v in want.items()}


def clip_model(module: ClipModel, pretrained: Any | None = None) -> RetrievalModel:
  """The :class:`RetrievalModel` of ``module`` (module docstring); ``pretrained``: the
  params ``init`` returns instead of its random ones (same tree)."""
  config = module.config
  context = config.text.context_length

  def padded(tokens):
    if not config.text.causal and tokens.shape[1] != context:
      raise ValueError(
        f"tokens: {tokens.shape[1]} ids per caption; the {config.name} text tower pools the "
        f"last of its {context}"
      )
    return tokens

  def init(rng, batch):
    variables = module.init(rng, batch["images"], padded(batch["tokens"]))
    if pretrained is None:
      return dict(variables)
    want = jax.tree.map(jnp.shape, variables["params"])
    if jax.tree.map(jnp.shape, pretrained) != want:
      raise ValueError("config.model.weights: the weights do not fit the towers of config.model")
    return {"params": jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), pretrained)}

  def forward(variables, batch, *, train=True, rngs=None, axis_name=None):
    del train, rngs, axis_name  # no dropout, no batch statistics
    u, v, _, _ = module.apply(variables, batch["images"], padded(batch["tokens"]))
    return ModelOutput(u, v, {}), {}

  def encode_images(variables, images):
    return l2_normalize(module.apply(variables, images, method="encode_image"), eps=1e-12)

  def encode_captions(variables, tokens):
    return l2_normalize(module.apply(variables, padded(tokens), method="encode_text"), eps=1e-12)

  names = ("logit_bias", "logit_scale") if config.learns_bias else ("logit_scale",)

  def learned_hyper(params):
    scale = jnp.clip(params["logit_scale"], 0.0, math.log(MAX_LOGIT_SCALE))
    out = {"logit_scale": jnp.exp(scale)}
    if config.learns_bias:
      out["logit_bias"] = params["logit_bias"]
    return out

  return dual_encoder(
    module,
    init,
    forward,
    encode_images=encode_images,
    encode_captions=encode_captions,
    inputs=CLIP_INPUTS,
    learned=names,
    learned_hyper=learned_hyper,
    layer_ranks=layer_ranks,
  )


def build(config: dict[str, Any], vocab_size: int, constants: Any) -> RetrievalModel:
  """The registry's builder: ``config``'s keys are :class:`ClipSettings`' fields;
  ``vocab_size`` must be the text tower's."""
  del constants
  settings = ClipSettings(**config)
  tower = _tower_config(settings)
  if vocab_size != tower.text.vocab_size:
    raise ValueError(
      f"config.model: the captions' tokenizer has {vocab_size} ids, the text tower of "
      f"{tower.name} embeds {tower.text.vocab_size}"
    )
  module = ClipModel(tower, dtype=jnp.dtype(settings.dtype), remat=settings.remat)
  return clip_model(module, _weights(settings, tower))


#: The registry's entry for ``"clip"``.
NETWORK = Network(build, inputs=CLIP_INPUTS, settings_of=ClipSettings, tower_inputs=tower_inputs)
