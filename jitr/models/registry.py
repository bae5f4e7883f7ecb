"""Networks by name: ``MODELS[name](config, vocab_size) -> RetrievalModel``.

``config`` is the experiment's ``config.model`` as a dict; its ``name`` picks the
builder (default :data:`DEFAULT_MODEL`, ``"vse"``) and the other keys are the builder's
keyword arguments:

- ``"vse"``: :func:`jitr.models.create_dual_encoder` (VSE++†, VSE∞);
- ``"sgr"`` / ``"saf"``: :class:`jitr.models.SGRAF` with ``module="SGR"`` / ``"SAF"``;
- ``"vsrn"``: :class:`jitr.models.VSRN`, plus ``caption_weight`` (default 1, the
  official weight; 0 turns the captioning branch off) and ``dataset`` (``"coco"`` or
  ``"f30k"``: :func:`jitr.models.vsrn_dataset_options`, overridable by explicit keys);
- ``"cvse"``: :class:`jitr.models.CVSE`, plus the keys of :func:`jitr.models.cvse_model`
  (``instance_weight``, ``consensus_weight``, ``kl_weight``, ``margin``, ``mining``,
  ``eval_fused_weight``, ``label_completion``: ``""`` for none) and ``concept_threshold``
  (the graph's ``t``, default 0.3). It needs the dataset's concepts:
  ``make_model(..., concepts=ConceptInputs(...))``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from jitr.models.cvse import CVSE
from jitr.models.cvse_graph import THRESHOLD
from jitr.models.cvse_model import ConceptInputs, concept_graph, cvse_model
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


#: ``{keyword: default}`` of :func:`jitr.models.cvse_model`: the CVSE settings a model config
#: gives the builder rather than the module.
CVSE_BUILDER_DEFAULTS: dict[str, Any] = {
  p.name: p.default
  for p in inspect.signature(cvse_model).parameters.values()
  if p.kind == p.KEYWORD_ONLY
}


def _cvse(
  config: dict[str, Any], vocab_size: int, concepts: ConceptInputs | None = None
) -> RetrievalModel:
  if concepts is None:
    raise ValueError(
      "config.model (name='cvse'): CVSE needs the dataset's concepts (word vectors and "
      "co-occurrence statistics): make_model(..., concepts=ConceptInputs(...))"
    )
  builder = {k: config.pop(k) for k in CVSE_BUILDER_DEFAULTS if k in config}
  if builder.get("label_completion") == "":  # a config's way to say none
    builder["label_completion"] = None
  graph = concept_graph(concepts, config.pop("concept_threshold", THRESHOLD))
  module = CVSE(vocab_size=vocab_size, **config)
  return cvse_model(module, concepts.vectors, graph, **builder)


#: The networks by name (``config.model.name``): each builds a :class:`RetrievalModel` from
#: the model config and the vocabulary size.
MODELS: dict[str, Callable[[dict[str, Any], int], RetrievalModel]] = {
  "vse": _vse,
  "sgr": _sgraf("SGR"),
  "saf": _sgraf("SAF"),
  "vsrn": _vsrn,
  "cvse": _cvse,
}

#: The networks whose builder takes the dataset's concepts (``concepts=``).
CONCEPT_MODELS = frozenset({"cvse"})


def make_model(
  config: Mapping[str, Any], vocab_size: int, *, concepts: ConceptInputs | None = None
) -> RetrievalModel:
  """The :class:`RetrievalModel` ``config["name"]`` (default ``"vse"``) names;
  ``concepts``: the dataset's concept constants, for the networks of
  :data:`!jitr.models.registry.CONCEPT_MODELS`."""
  config = dict(config)
  name = config.pop("name", DEFAULT_MODEL)
  if name not in MODELS:
    raise ValueError(f"config.model.name: expected one of {sorted(MODELS)}, got {name!r}")
  try:
    if name in CONCEPT_MODELS:
      return MODELS[name](config, vocab_size, concepts)
    return MODELS[name](config, vocab_size)
  except TypeError as e:  # an unknown keyword for the builder
    raise ValueError(f"config.model (name={name!r}): {e}") from e
