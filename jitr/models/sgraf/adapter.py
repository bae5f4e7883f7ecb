"""SGR / SAF behind the one :class:`~jitr.models.RetrievalModel` interface, and the
registry's builders (``config.model.name = "sgr"`` / ``"saf"``: :class:`SGRAF`'s fields)."""

from __future__ import annotations

import flax.linen as nn

from jitr.models.retrieval_model import (
  ModelOutput,
  RetrievalModel,
  apply_collections,
  image_mask_of,
)


def sgraf_model(module: nn.Module) -> RetrievalModel:
  """An SGR or SAF :class:`jitr.models.SGRAF`: representations ``(regions, mask)`` and
  ``(words, mask)``; ``score`` is the cross-attention head (VisualSA's and SAF's
  BatchNorms update ``batch_stats`` in training)."""

  def init(rng, batch):
    return dict(
      module.init(
        rng, batch["images"], image_mask_of(batch), batch["tokens"], batch["lengths"], False
      )
    )

  def forward(variables, batch, *, train=True, rngs=None, axis_name=None):
    del axis_name  # the encoders hold no batch statistics
    regions = module.apply(variables, batch["images"], image_mask_of(batch), method="encode_image")
    words = module.apply(
      variables, batch["tokens"], batch["lengths"], train, rngs=rngs, method="encode_text"
    )
    return ModelOutput(regions, words, {}), {}

  def score(variables, images, captions, *, train=False, rngs=None, axis_name=None):
    m = module.clone(axis_name=axis_name)
    return apply_collections(
      m, variables, *images, *captions, train, train=train, rngs=rngs, method="score"
    )

  return RetrievalModel(
    pairwise=True,
    init=init,
    forward=forward,
    score=score,
    encode_images=lambda v, x, m: module.apply(v, x, m, method="encode_image"),
    encode_captions=lambda v, t, n: module.apply(v, t, n, False, method="encode_text"),
    module=module,
  )
