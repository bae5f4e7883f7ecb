"""The two-branch network behind the one :class:`~jitr.models.RetrievalModel` interface, and
the registry's builder (``config.model.name = "twobranch"``: :class:`TwoBranch`'s fields).

It reads the batch keys ``images`` (image vectors ``[B, D_img]``) and ``text_vectors``
(text vectors ``[B, D_txt]``): its :attr:`!Network.inputs`, so the train step gathers
every other key as the queries' data and the evaluation encodes each split's images and
``text_vectors`` (:mod:`!jitr.training.embed`).
"""

from __future__ import annotations

from typing import Any

from jitr.models.dual_encoder import dual_encoder
from jitr.models.retrieval_model import ModelOutput, RetrievalModel
from jitr.models.twobranch.model import TwoBranch

TEXT_VECTORS = "text_vectors"
"""The batch key of each row's text vector (``jitr.data.batch_keys.TEXT_VECTORS``)."""
INPUTS = ("images", TEXT_VECTORS)
"""The batch keys the two-branch network reads."""


def two_branch_model(module: TwoBranch) -> RetrievalModel:
  """A :class:`TwoBranch` as a dual encoder: ``sim = img @ txt.T``; dropout draws from the
  ``dropout`` rng in training."""

  def init(rng, batch):
    return dict(module.init(rng, batch["images"], batch[TEXT_VECTORS]))

  def forward(variables, batch, *, train=True, rngs=None, axis_name=None):
    del axis_name  # nothing is synchronised across devices
    img, txt = module.apply(variables, batch["images"], batch[TEXT_VECTORS], train, rngs=rngs)
    return ModelOutput(img, txt, {}), {}

  return dual_encoder(module, init, forward, inputs=INPUTS)


def build(config: dict[str, Any], vocab_size: int, constants: Any) -> RetrievalModel:
  """The registry's builder: ``config``'s keys are :class:`TwoBranch`'s fields (the layer
  widths as lists or tuples)."""
  del vocab_size, constants  # vectors in, no vocabulary and no dataset constants
  for key in ("image_hidden", "text_hidden"):
    if key in config:
      config[key] = tuple(config[key])
  return two_branch_model(TwoBranch(**config))
