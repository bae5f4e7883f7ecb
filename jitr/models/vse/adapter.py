"""VSE++ / VSE∞ behind the one :class:`~jitr.models.RetrievalModel` interface, and the
registry's builder (``config.model.name = "vse"``: :func:`jitr.models.create_dual_encoder`'s
keywords)."""

from __future__ import annotations

from typing import Any

import flax.linen as nn

from jitr.models.dual_encoder import dual_encoder
from jitr.models.retrieval_model import ModelOutput, RetrievalModel
from jitr.models.vse.model import create_dual_encoder


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

  return dual_encoder(module, init, forward)


def build(config: dict[str, Any], vocab_size: int, constants: Any) -> RetrievalModel:
  """The registry's builder: ``config``'s keys are :func:`create_dual_encoder`'s."""
  del constants  # the dual encoder reads no dataset constants
  return dual_encoder_model(create_dual_encoder(vocab_size=vocab_size, **config))
