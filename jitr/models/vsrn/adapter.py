"""VSRN behind the one :class:`~jitr.models.RetrievalModel` interface (its captioning NLL
as an auxiliary loss), and the registry's builder (``config.model.name = "vsrn"``)."""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.models.dual_encoder import dual_encoder
from jitr.models.retrieval_model import (
  ModelOutput,
  RetrievalModel,
  apply_collections,
  image_mask_of,
)
from jitr.models.vsrn.model import VSRN, vsrn_dataset_options


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
    args = (batch["images"], image_mask_of(batch), batch["tokens"], batch["lengths"])
    return dict(module.init(rng, *args, with_caption, method=_vsrn_init_method))

  def forward(variables, batch, *, train=True, rngs=None, axis_name=None):
    m = module.clone(axis_name=axis_name)
    args = (batch["images"], image_mask_of(batch), batch["tokens"], batch["lengths"], train)
    (img, txt, aux), state = apply_collections(
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

  return dual_encoder(
    module,
    init,
    forward,
    encode_images=encode_images,
    aux_weights={"caption": float(caption_weight)} if with_caption else {},
  )


def build(config: dict[str, Any], vocab_size: int, constants: Any) -> RetrievalModel:
  """The registry's builder: :class:`VSRN`'s fields, plus ``caption_weight`` (default 1,
  the official weight; 0 turns the captioning branch off) and ``dataset`` (``"coco"`` or
  ``"f30k"``: :func:`vsrn_dataset_options`, overridable by explicit keys)."""
  del constants  # VSRN reads no dataset constants
  caption_weight = config.pop("caption_weight", 1.0)
  dataset = config.pop("dataset", None)
  options = vsrn_dataset_options(dataset) if dataset is not None else {}
  return vsrn_model(VSRN(vocab_size=vocab_size, **{**options, **config}), caption_weight)
