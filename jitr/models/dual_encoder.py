"""The :class:`~jitr.models.RetrievalModel` of a dual encoder: each side embedded once,
``sim = img @ txt.T``.

Every dual encoder's adapter (VSE++, VSE∞, VSRN, CVSE, the two-branch network) gives its
``init`` and ``forward``; :func:`dual_encoder` adds what they share: the dot-product score
and, unless the network has its own, evaluation encoders that call the module's
``encode_image`` / ``encode_text`` methods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.linen as nn

from jitr.models.retrieval_model import RetrievalModel, dot_score


def method_encoder(module: nn.Module, method: str) -> Callable[..., Any]:
  """``(variables, *inputs) -> module.apply(variables, *inputs, method=method)``: an
  evaluation encoder of one side (eval mode, no mutable collections)."""

  def encode(variables, *inputs):
    return module.apply(variables, *inputs, method=method)

  return encode


def dual_encoder(
  module: nn.Module,
  init: Callable[..., dict],
  forward: Callable[..., Any],
  *,
  encode_images: Callable[..., Any] | None = None,
  encode_captions: Callable[..., Any] | None = None,
  **fields: Any,
) -> RetrievalModel:
  """The dual encoder ``module`` as a :class:`RetrievalModel` (``pairwise=False``, ``score``
  the dot product of embeddings) with its ``init`` and ``forward``. ``encode_images`` /
  ``encode_captions``: ``None`` calls the module's ``encode_image`` / ``encode_text``;
  ``fields``: the model's other :class:`RetrievalModel` fields (``aux_weights``,
  ``inputs``, ...)."""
  return RetrievalModel(
    pairwise=False,
    init=init,
    forward=forward,
    score=dot_score,
    encode_images=encode_images or method_encoder(module, "encode_image"),
    encode_captions=encode_captions or method_encoder(module, "encode_text"),
    module=module,
    **fields,
  )
