"""The official CVSE checkpoint as ``jitr-import`` reads it (:data:`OFFICIAL`): its 8 state
dicts, the concept graph its ``C_GCN`` carries, which the run's concepts must reproduce,
and the Python 3 ``str(bytes)`` caption form its data loader tokenises."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from jitr.models.cvse.adapter import CONCEPTS, concept_graph
from jitr.models.cvse.convert import (
  PREFIXES,
  adjacency_from_state_dict,
  config_from_state_dict,
  params_from_state_dict,
)
from jitr.models.cvse.graph import THRESHOLD
from jitr.models.official_format import ConvertedWeights, OfficialFormat

# The caption form of the official data.py: the Python 3 str of the caption's bytes
CAPTION_FORM = "python3_bytes"


def converted_weights(state_dict: dict[str, Any]) -> ConvertedWeights:
  """The official flat state dict as a ``"cvse"`` network's weights; ``extra`` holds the
  checkpoint's normalised concept graph (``adjacency``) and the width of the concept vectors
  its GCN takes (``concept_dim``)."""
  fields = config_from_state_dict(state_dict)
  params, batch_stats = params_from_state_dict(state_dict)
  extra = {
    "adjacency": adjacency_from_state_dict(state_dict),
    "concept_dim": fields.pop("concept_dim"),
  }
  return ConvertedWeights("cvse", fields, fields["img_dim"], params, batch_stats, extra)


def opt_disagreement(opt: Mapping[str, Any], weights: ConvertedWeights) -> str | None:
  """``opt.input_channel`` when it is not the width of the concept vectors the GCN takes."""
  width = weights.extra["concept_dim"]
  if "input_channel" in opt and opt["input_channel"] != width:
    return f"opt.input_channel={opt['input_channel']!r}, but the weights have concept_dim {width!r}"
  return None


def graph_threshold(model: Mapping[str, Any]) -> float:
  """The concept graph's threshold ``t`` of a model config: its ``concept_threshold``, else
  the network's default :data:`~jitr.models.cvse.graph.THRESHOLD`."""
  return model["concept_threshold"] if "concept_threshold" in model else THRESHOLD


def check_concepts(
  model: Mapping[str, Any],
  weights: ConvertedWeights,
  constants: Mapping[str, Any],
  origins: Mapping[str, str],
) -> None:
  """The run's concepts (``constants["concepts"]``, read from ``origins["concepts"]``) must
  be the checkpoint's: as many, with vectors of the width its GCN takes, and the same
  normalised graph (``gen_adj`` of its ``C_GCN.adj_all`` at ``model``'s threshold, within
  float32 rounding)."""
  graph, width = weights.extra["adjacency"], weights.extra["concept_dim"]
  concepts = constants.get(CONCEPTS)
  if concepts is None:
    raise ValueError("config.concepts: CVSE needs the concepts the checkpoint was trained with")
  source = origins.get(CONCEPTS) or "the concepts built from the captions"
  vectors = np.asarray(concepts.vectors)
  if vectors.shape != (graph.shape[0], width):
    raise ValueError(
      f"config.concepts.source: {source} has {vectors.shape[0]} concepts of "
      f"{vectors.shape[1]}-d vectors, the checkpoint's GCN {graph.shape[0]} of "
      f"{width}-d (use the official concept files it was trained with)"
    )
  ours = concept_graph(concepts, graph_threshold(model))
  if not np.allclose(ours, graph, atol=1e-5):
    worst = float(np.max(np.abs(ours - graph)))
    raise ValueError(
      f"config.concepts.source: the concept graph of {source} differs from the checkpoint's "
      f"C_GCN.adj_all by up to {worst:.3g} (use the official concept files it was trained with)"
    )


#: The official CVSE checkpoint: its 8 state dicts, concept graph and caption form.
OFFICIAL = OfficialFormat(
  "CVSE",
  PREFIXES,
  converted_weights,
  opt_disagreement=opt_disagreement,
  check_constants=check_concepts,
  caption_form=CAPTION_FORM,
)
