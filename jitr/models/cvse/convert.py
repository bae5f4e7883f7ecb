"""Official CVSE (PyTorch) checkpoints -> :class:`jitr.models.CVSE` variables.

The official ``train_*.py`` saves ``{'epoch', 'model': [8 state dicts], 'best_rsum', 'opt',
'Eiters'}``, the state dicts of ``img_enc``, ``txt_enc``, ``V_self_atten_enhance``,
``T_self_atten_enhance``, ``V_consensus_level_embedding``, ``T_consensus_level_embedding``,
``C_GCN`` and ``Multi_feature_fusing`` (empty for ``weight_sum``), in that order.
:func:`params_from_state_dict` takes them flattened under those prefixes
(:func:`!jitr.models.torch_state.flatten_state_dicts`) and returns ``(params,
batch_stats)``; :func:`adjacency_from_state_dict` the concept graph the checkpoint carries.

Official layout notes:

- Each ``fcN`` layer is also registered as ``embedding_N.0`` of an ``nn.Sequential``, so a
  state dict holds both keys for one tensor; the ``embedding_N.0`` copy must equal ``fcN``
  (a checkpoint where they differ is refused) and is dropped. ``embedding_N.1`` is the
  BatchNorm of the ``use_BatchNorm`` setting.
- ``V_self_atten_enhance.fc4`` is declared and never called, ``fc2_2`` /
  ``embedding_2_2`` only run when the memory is narrower than the regions (never in CVSE),
  ``C_GCN.joint_att_emb`` is never called: their weights are read and dropped.
- ``C_GCN.adj_O_P`` / ``adj_O_M`` / ``adj_all`` are ``nn.Parameter`` s holding the
  processed co-occurrence graphs (``gen_A_concept``; the forward detaches them, so they
  never train). The ``whole_graph`` forward uses ``gen_adj(adj_all)``, which
  :func:`adjacency_from_state_dict` returns.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from jitr.models.cvse.graph import normalized_adjacency
from jitr.models.torch_state import StateDictReader, load_flat_state_dict, shape_reader

PREFIXES = (
  "img_enc",
  "txt_enc",
  "V_self_atten_enhance",
  "T_self_atten_enhance",
  "V_consensus_level_embedding",
  "T_consensus_level_embedding",
  "C_GCN",
  "Multi_feature_fusing",
)
NAME = "CVSE state_dict"


def _aliased_linear(r: StateDictReader, prefix: str, fc: str, sequential: str) -> dict:
  """``{prefix}.{fc}`` as a Flax Dense, after checking ``{prefix}.{sequential}.0`` is the
  same tensor."""
  out = r.linear(f"{prefix}.{fc}")
  alias = f"{prefix}.{sequential}.0"
  if f"{alias}.weight" in r.state:
    copy = r.linear(alias)
    for key, value in out.items():
      if not np.array_equal(copy[key], value):
        raise ValueError(
          f"{NAME}: {alias}.{'weight' if key == 'kernel' else 'bias'} differs from "
          f"{prefix}.{fc} (they are one layer in the official model)"
        )
  return out


def _drop(r: StateDictReader, *prefixes: str) -> None:
  for key in [k for k in r.state if k.startswith(prefixes)]:
    del r.state[key]


def _visual_attention(r: StateDictReader, use_bn: bool) -> tuple[dict, dict]:
  p = "V_self_atten_enhance"
  params = {
    "fc1": _aliased_linear(r, p, "fc1", "embedding_1"),
    "fc2": _aliased_linear(r, p, "fc2", "embedding_2"),
    "fc3": _aliased_linear(r, p, "fc3", "embedding_3"),
  }
  stats = {}
  if use_bn:
    for name, index in (("bn1", "embedding_1.1"), ("bn2", "embedding_2.1")):
      params[name], stats[name] = r.batch_norm(f"{p}.{index}")
  _drop(r, f"{p}.fc4.", f"{p}.fc2_2.", f"{p}.embedding_2_2.")
  return params, stats


def _textual_attention(r: StateDictReader) -> dict:
  p = "T_self_atten_enhance"
  return {f"fc{i}": _aliased_linear(r, p, f"fc{i}", f"embedding_{i}") for i in (1, 2, 3)}


def _consensus(r: StateDictReader, p: str, use_bn: bool) -> tuple[dict, dict]:
  params = {f"fc{i}": _aliased_linear(r, p, f"fc{i}", f"embedding_{i}") for i in (1, 2, 3)}
  stats = {}
  if use_bn:
    for i in (1, 2):
      params[f"bn{i}"], stats[f"bn{i}"] = r.batch_norm(f"{p}.embedding_{i}.1")
  return params, stats


def uses_batch_norm(state_dict: dict[str, Any]) -> bool:
  """The ``use_BatchNorm`` setting the weights were trained with."""
  return "V_self_atten_enhance.embedding_1.1.running_mean" in state_dict


def params_from_state_dict(state_dict: dict[str, Any]) -> tuple[dict, dict]:
  """Official flat state dict -> ``(params, batch_stats)`` of :class:`jitr.models.CVSE`."""
  use_bn = uses_batch_norm(state_dict)
  r = StateDictReader(state_dict, NAME)
  params = {
    "img_enc": {"fc": r.linear("img_enc.fc")},
    "txt_enc": {
      "embed": {"embedding": r.take("txt_enc.embed.weight", 2)},
      "rnn": {"forward": r.gru("txt_enc.rnn", ""), "backward": r.gru("txt_enc.rnn", "_reverse")},
    },
    "textual_attention": _textual_attention(r),
    "gcn": {
      "gc1_weight": r.take("C_GCN.gc1.weight", 2),
      "gc2_weight": r.take("C_GCN.gc2.weight", 2),
    },
  }
  stats = {}
  params["visual_attention"], stats["visual_attention"] = _visual_attention(r, use_bn)
  for ours, theirs in (
    ("visual_consensus", "V_consensus_level_embedding"),
    ("textual_consensus", "T_consensus_level_embedding"),
  ):
    params[ours], stats[ours] = _consensus(r, theirs, use_bn)
  _drop(r, "C_GCN.adj_", "C_GCN.joint_att_emb.")
  r.finish()
  return params, ({k: v for k, v in stats.items() if v} if use_bn else {})


def adjacency_from_state_dict(state_dict: dict[str, Any]) -> np.ndarray:
  """``gen_adj(C_GCN.adj_all)`` [C, C] (float64): the graph the official forward uses."""
  key = "C_GCN.adj_all"
  if key not in state_dict:
    raise KeyError(f"{NAME}: missing key {key!r}")
  value = state_dict[key]
  value = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
  if value.ndim != 2 or value.shape[0] != value.shape[1]:
    raise ValueError(f"{NAME}: {key!r} must be a square matrix, got {value.shape}")
  return normalized_adjacency(value.astype(np.float64))


def config_from_state_dict(state_dict: dict[str, Any]) -> dict[str, Any]:
  """The :class:`jitr.models.CVSE` fields the weights fix."""
  required = ("img_enc.fc.weight", "txt_enc.embed.weight", "C_GCN.gc1.weight")
  shape = shape_reader(state_dict, NAME, required)
  embed_dim, img_dim = shape("img_enc.fc.weight")
  vocab_size, word_dim = shape("txt_enc.embed.weight")
  config = dict(
    vocab_size=vocab_size,
    img_dim=img_dim,
    word_dim=word_dim,
    embed_dim=embed_dim,
    use_bn=uses_batch_norm(state_dict),
    concept_dim=shape("C_GCN.gc1.weight")[0],
  )
  if config["use_bn"]:
    config["num_region"] = shape("V_self_atten_enhance.embedding_1.1.running_mean")[0]
  return config


def load_official_state_dict(path: str | os.PathLike) -> dict[str, Any]:
  """Reads an official CVSE checkpoint (``torch.load(..., weights_only=True)``) and
  flattens its 8 state dicts under :data:`PREFIXES`; damaged files raise
  :class:`jitr.models.official_checkpoint.OfficialCheckpointError`."""
  return load_flat_state_dict(path, PREFIXES, "CVSE")
