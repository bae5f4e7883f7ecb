"""One interface for every retrieval network: what training and evaluation see.

A :class:`RetrievalModel` is a frozen bundle of pure functions over a Flax
``variables`` dict (``{"params": ..., maybe "batch_stats": ...}``)::

    init(rng, batch) -> variables
    forward(variables, batch, *, train, rngs, axis_name) -> (ModelOutput, new_state)
    score(variables, images, captions, *, train, rngs, axis_name) -> (sim [Q, C], new_state)
    encode_images(variables, images, image_mask) -> representation     (eval mode)
    encode_captions(variables, tokens, lengths[, concept_labels]) -> representation

``batch`` holds ``images [B, R, F]``, ``image_mask [B, R]`` (optional), ``tokens [B, L]``
and ``lengths [B]``; row ``b`` is pair ``b`` (its image and its caption). A
*representation* is any pytree with rows first: an embedding ``[B, E]`` (dual encoders,
``pairwise=False``, ``sim = img @ txt.T``) or ``(regions, mask)`` / ``(words, mask)``
(similarity models, ``pairwise=True``, ``score`` runs cross-attention on every pair).
``new_state`` is the mutated non-param collections (``{}`` when none): running
BatchNorm statistics. ``axis_name`` is the data-parallel axis the batch is split over
(``None``: one device); the models make their ``new_state`` identical on every device
(sync BatchNorm; SAF's per-caption moments gathered), so the step's ``pmean`` of it is
exact. ``ModelOutput.aux_losses`` are per-row auxiliary losses ``{name: [B]}`` (VSRN's
caption NLL per pair) that the step adds with weight ``aux_weights[name]``.

Builders: :func:`dual_encoder_model`, :func:`sgraf_model`, :func:`vsrn_model`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jitr.models.dual_encoder import similarity

Batch = Mapping[str, jax.Array]
Variables = Mapping[str, Any]


class ModelOutput(NamedTuple):
  """The device's rows' representations and per-row auxiliary losses ``{name: [B]}``."""

  images: Any
  captions: Any
  aux_losses: Mapping[str, jax.Array]


@dataclasses.dataclass(frozen=True)
class RetrievalModel:
  """The functions training and evaluation call (module docstring for the signatures)."""

  pairwise: bool
  init: Callable[[jax.Array, Batch], dict]
  forward: Callable[..., tuple[ModelOutput, dict]]
  score: Callable[..., tuple[jax.Array, dict]]
  encode_images: Callable[[Variables, jax.Array, jax.Array | None], Any]
  encode_captions: Callable[[Variables, jax.Array, jax.Array], Any]
  aux_weights: Mapping[str, float] = dataclasses.field(default_factory=dict)
  module: nn.Module | None = None
  """The underlying Flax module (for converters and inspection; training never uses it)."""
  complete_caption_labels: Callable[[Any, Any, np.ndarray], np.ndarray] | None = None
  """Evaluation's second pass, for models whose captions take concept labels (CVSE):
  ``(image reps, caption reps, labels [N_cap, C]) -> labels'`` from a first encoding;
  the split's captions are then encoded again with ``labels'``."""


def _image_mask(batch: Batch) -> jax.Array:
  mask = batch.get("image_mask")
  return jnp.ones(batch["images"].shape[:2], bool) if mask is None else mask


def split_variables(variables: Variables) -> tuple[Any, dict]:
  """``(params, the other collections)``."""
  return variables["params"], {k: v for k, v in variables.items() if k != "params"}


def _dot_score(variables, images, captions, *, train=False, rngs=None, axis_name=None):
  """The dual encoders' score: ``s_ij = <img_i, txt_j>`` in float32 (no variables)."""
  del variables, train, rngs, axis_name
  return similarity(images, captions), {}


def dual_encoder_model(module: nn.Module) -> RetrievalModel:
  """A :class:`jitr.models.DualEncoder`-like module (``__call__(images, tokens, lengths,
  image_mask)``, ``encode_image``, ``encode_text``) without mutable collections."""

  def init(rng, batch):
    return dict(
      module.init(rng, batch["images"], batch["tokens"], batch["lengths"], batch.get("image_mask"))
    )

  def forward(variables, batch, *, train=True, rngs=None, axis_name=None):
    del train, axis_name
    img, txt = module.apply(
      variables,
      batch["images"],
      batch["tokens"],
      batch["lengths"],
      batch.get("image_mask"),
      rngs=rngs,
    )
    return ModelOutput(img, txt, {}), {}

  return RetrievalModel(
    pairwise=False,
    init=init,
    forward=forward,
    score=_dot_score,
    encode_images=lambda v, x, m: module.apply(v, x, m, method="encode_image"),
    encode_captions=lambda v, t, n: module.apply(v, t, n, method="encode_text"),
    module=module,
  )


def _mutable(train: bool) -> list[str] | bool:
  return ["batch_stats"] if train else False


def _apply(module, variables, *args, train, rngs, method):
  """``module.apply`` that returns ``(out, mutated collections)`` in both modes."""
  out = module.apply(variables, *args, rngs=rngs, method=method, mutable=_mutable(train))
  return out if train else (out, {})


def sgraf_model(module: nn.Module) -> RetrievalModel:
  """An SGR or SAF :class:`jitr.models.SGRAF`: representations ``(regions, mask)`` and
  ``(words, mask)``; ``score`` is the cross-attention head (VisualSA's and SAF's
  BatchNorms update ``batch_stats`` in training)."""

  def init(rng, batch):
    return dict(
      module.init(
        rng, batch["images"], _image_mask(batch), batch["tokens"], batch["lengths"], False
      )
    )

  def forward(variables, batch, *, train=True, rngs=None, axis_name=None):
    del axis_name  # the encoders hold no batch statistics
    regions = module.apply(variables, batch["images"], _image_mask(batch), method="encode_image")
    words = module.apply(
      variables, batch["tokens"], batch["lengths"], train, rngs=rngs, method="encode_text"
    )
    return ModelOutput(regions, words, {}), {}

  def score(variables, images, captions, *, train=False, rngs=None, axis_name=None):
    m = module.clone(axis_name=axis_name)
    return _apply(m, variables, *images, *captions, train, train=train, rngs=rngs, method="score")

  return RetrievalModel(
    pairwise=True,
    init=init,
    forward=forward,
    score=score,
    encode_images=lambda v, x, m: module.apply(v, x, m, method="encode_image"),
    encode_captions=lambda v, t, n: module.apply(v, t, n, False, method="encode_text"),
    module=module,
  )


def caption_targets(tokens: jax.Array, lengths: jax.Array) -> tuple[jax.Array, jax.Array]:
  """The decoder's teacher-forcing targets from the retrieval batch's tokens.

  jitr's captions are ``<start> w_1 .. w_n <end>`` padded with 0 (``jitr.data.vocab``),
  ``lengths`` counting ``<start>`` and ``<end>`` -- the official VSRN wrapping. The
  official ``LanguageModelCriterion`` mask also covers the first padding 0 after
  ``<end>``, so this appends one 0 column and returns ``lengths + 1``.
  """
  padded = jnp.pad(tokens, ((0, 0), (0, 1)))
  return padded, lengths + 1


def _vsrn_init_method(module, images, mask, tokens, lengths, with_caption: bool):
  _, regions, region_mask = module.encode_image(images, mask, False)
  module.encode_text(tokens, lengths)
  if with_caption:
    module.caption_log_likelihood(regions, region_mask, *caption_targets(tokens, lengths))


def _vsrn_forward_method(module, images, mask, tokens, lengths, train: bool, with_caption: bool):
  img, regions, region_mask = module.encode_image(images, mask, train)
  txt = module.encode_text(tokens, lengths)
  aux = {}
  if with_caption:
    ll = module.caption_log_likelihood(
      regions, region_mask, *caption_targets(tokens, lengths), train
    )
    aux["caption"] = -ll
  return img, txt, aux


def vsrn_model(module: nn.Module, caption_weight: float = 1.0) -> RetrievalModel:
  """A :class:`jitr.models.VSRN`: a dual encoder (``sim = img @ txt.T``) whose forward
  also gives the per-pair caption NLL ``aux_losses["caption"] = −ll_b`` [B] (the step
  adds ``caption_weight · mean_b``, the official ``LanguageModelCriterion``).
  ``caption_weight = 0``: the captioning branch is neither initialised nor run.
  The GCN / feature BatchNorms are synchronised over ``axis_name`` in training."""
  if caption_weight < 0:
    raise ValueError(f"vsrn_model: caption_weight must be >= 0, got {caption_weight}")
  with_caption = caption_weight > 0

  def init(rng, batch):
    args = (batch["images"], _image_mask(batch), batch["tokens"], batch["lengths"])
    return dict(module.init(rng, *args, with_caption, method=_vsrn_init_method))

  def forward(variables, batch, *, train=True, rngs=None, axis_name=None):
    m = module.clone(axis_name=axis_name)
    args = (batch["images"], _image_mask(batch), batch["tokens"], batch["lengths"], train)
    (img, txt, aux), state = _apply(
      m,
      variables,
      *args,
      with_caption,
      train=train,
      rngs=rngs,
      method=_vsrn_forward_method,
    )
    return ModelOutput(img, txt, aux), state

  def encode_images(variables, images, image_mask):
    return module.apply(variables, images, image_mask, False, method="encode_image")[0]

  return RetrievalModel(
    pairwise=False,
    init=init,
    forward=forward,
    score=_dot_score,
    encode_images=encode_images,
    encode_captions=lambda v, t, n: module.apply(v, t, n, method="encode_text"),
    aux_weights={"caption": float(caption_weight)} if with_caption else {},
    module=module,
  )
