"""Networks by name: ``MODELS[name](config, vocab_size, constants) -> RetrievalModel``.

``config`` is the experiment's ``config.model`` as a dict; its ``name`` picks the
network (default :data:`DEFAULT_MODEL`, ``"vse"``) and the other keys are its builder's
keyword arguments; ``constants`` holds the dataset constants a network declares it needs
(:attr:`!Network.constants`, by name), ignored by the others:

- ``"vse"``: :func:`jitr.models.create_dual_encoder` (VSE++†, VSE∞);
- ``"sgr"`` / ``"saf"``: :class:`jitr.models.SGRAF` with ``module="SGR"`` / ``"SAF"``;
- ``"vsrn"``: :class:`jitr.models.VSRN`, plus ``caption_weight`` (default 1, the
  official weight; 0 turns the captioning branch off) and ``dataset`` (``"coco"`` or
  ``"f30k"``: :func:`jitr.models.vsrn_dataset_options`, overridable by explicit keys);
- ``"cvse"``: :class:`jitr.models.CVSE`, plus the fields of :class:`jitr.models.cvse.CVSETerms`
  (``instance_weight``, ``consensus_weight``, ``kl_weight``, ``margin``, ``mining``,
  ``eval_fused_weight``, ``label_completion``: ``""`` for none) and ``concept_threshold``
  (the graph's ``t``, default 0.3). It needs the dataset's concepts,
  ``constants={"concepts": ConceptInputs(...)}``, and its batches carry
  ``concept_labels`` (its :attr:`!Network.inputs`);
- ``"vseinf"``: VSE∞ as its official code builds it (BUTD regions, BERT captions of
  WordPiece ids): :func:`jitr.models.vseinf.create_vseinf` (``pretrained``: a Hugging
  Face BERT folder, ``""`` for a random BERT of the ``bert_*`` sizes);
- ``"twobranch"``: :class:`jitr.models.TwoBranch`, one MLP per modality over a labelled
  vector dataset's image and text vectors (CMAL²R); it reads ``images`` and
  ``text_vectors`` (its :attr:`!Network.inputs`);
- ``"clip"``: a CLIP / SigLIP dual encoder (:class:`jitr.models.ClipModel`) of
  :class:`jitr.models.clip.network.ClipSettings` (an open_clip tower name or config file,
  its weights and tag); it reads ``images`` (pixels) and ``tokens`` (the text tower's ids)
  and learns the objective's ``logit_scale`` (and SigLIP's ``logit_bias``).

Each :class:`Network` declares, before anything is built, the batch keys its model reads
(``inputs``) and the dataset constants its builder needs (``constants``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jitr.models import cvse, sgraf, twobranch, vse, vseinf, vsrn
from jitr.models.clip import network as clip_network
from jitr.models.retrieval_model import Network, RetrievalModel

DEFAULT_MODEL = "vse"

#: The networks by name (``config.model.name``): each builds a :class:`RetrievalModel` from
#: the model config, the vocabulary size and the dataset constants it declares.
MODELS: dict[str, Network] = {
  "vse": vse.NETWORK,
  "sgr": sgraf.network("SGR"),
  "saf": sgraf.network("SAF"),
  "vsrn": vsrn.NETWORK,
  "cvse": cvse.NETWORK,
  "vseinf": vseinf.NETWORK,
  "twobranch": twobranch.NETWORK,
  "clip": clip_network.NETWORK,
}


def network_name(model: Any) -> str:
  """The network a model group names: its ``name``, :data:`DEFAULT_MODEL` when unset (the
  dual encoder)."""
  return model.get("name", DEFAULT_MODEL)


def network_of(config: Mapping[str, Any]) -> tuple[str, Network]:
  """``(name, Network)`` of ``config["name"]`` (default ``"vse"``); ``ValueError`` (one
  line) for an unknown name."""
  name = network_name(dict(config))
  if name not in MODELS:
    raise ValueError(f"config.model.name: expected one of {sorted(MODELS)}, got {name!r}")
  return name, MODELS[name]


def make_model(
  config: Mapping[str, Any], vocab_size: int, constants: Mapping[str, Any] | None = None
) -> RetrievalModel:
  """The :class:`RetrievalModel` ``config["name"]`` (default ``"vse"``) names; ``constants``:
  the dataset constants by name (``{"concepts": ConceptInputs(...)}``), of which each
  network reads those its :attr:`!Network.constants` names."""
  name, network = network_of(config)
  config = {k: v for k, v in dict(config).items() if k != "name"}
  try:
    return network(config, vocab_size, constants)
  except TypeError as e:  # an unknown keyword for the builder
    raise ValueError(f"config.model (name={name!r}): {e}") from e
