"""Networks by name: ``MODELS[name](config, vocab_size) -> RetrievalModel``.

``config`` is the experiment's ``config.model`` as a dict; its ``name`` picks the
builder (default :data:`DEFAULT_MODEL`, ``"vse"``) and the other keys are the builder's
keyword arguments:

- ``"vse"``: :func:`jitr.models.create_dual_encoder` (VSE++†, VSE∞);
- ``"sgr"`` / ``"saf"``: :class:`jitr.models.SGRAF` with ``module="SGR"`` / ``"SAF"``;
- ``"vsrn"``: :class:`jitr.models.VSRN`, plus ``caption_weight`` (default 1, the
  official weight; 0 turns the captioning branch off) and ``dataset`` (``"coco"`` or
  ``"f30k"``: :func:`jitr.models.vsrn_dataset_options`, overridable by explicit keys).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jitr.models.dual_encoder import create_dual_encoder
from jitr.models.retrieval_model import (
  RetrievalModel,
  dual_encoder_model,
  sgraf_model,
  vsrn_model,
)
from jitr.models.sgraf import SGRAF
from jitr.models.vsrn import VSRN, vsrn_dataset_options

DEFAULT_MODEL = "vse"


def _vse(config: dict[str, Any], vocab_size: int) -> RetrievalModel:
  return dual_encoder_model(create_dual_encoder(vocab_size=vocab_size, **config))


def _sgraf(module: str) -> Callable[[dict[str, Any], int], RetrievalModel]:
  def build(config: dict[str, Any], vocab_size: int) -> RetrievalModel:
    return sgraf_model(SGRAF(vocab_size=vocab_size, module=module, **config))

  return build


def _vsrn(config: dict[str, Any], vocab_size: int) -> RetrievalModel:
  caption_weight = config.pop("caption_weight", 1.0)
  dataset = config.pop("dataset", None)
  options = vsrn_dataset_options(dataset) if dataset is not None else {}
  return vsrn_model(VSRN(vocab_size=vocab_size, **{**options, **config}), caption_weight)


#: The networks by name (``config.model.name``): each builds a :class:`RetrievalModel` from
#: the model config and the vocabulary size.
MODELS: dict[str, Callable[[dict[str, Any], int], RetrievalModel]] = {
  "vse": _vse,
  "sgr": _sgraf("SGR"),
  "saf": _sgraf("SAF"),
  "vsrn": _vsrn,
}


def make_model(config: Mapping[str, Any], vocab_size: int) -> RetrievalModel:
  """The :class:`RetrievalModel` ``config["name"]`` (default ``"vse"``) names."""
  config = dict(config)
  name = config.pop("name", DEFAULT_MODEL)
  if name not in MODELS:
    raise ValueError(f"config.model.name: expected one of {sorted(MODELS)}, got {name!r}")
  try:
    return MODELS[name](config, vocab_size)
  except TypeError as e:  # an unknown keyword for the builder
    raise ValueError(f"config.model (name={name!r}): {e}") from e
