"""Official SGRAF (PyTorch) checkpoints -> :class:`jitr.models.SGRAF` variables.

The official ``train.py`` saves ``{'epoch', 'model': [img_enc, txt_enc, sim_enc]
state_dicts, 'best_rsum', 'opt', 'Eiters'}``. :func:`params_from_state_dict`
takes one flat state dict whose keys carry the official attribute paths
(``img_enc.fc.weight``, ``txt_enc.cap_rnn.weight_ih_l0``,
``sim_enc.SGR_module.0.graph_query_w.weight``, ...) and returns ``(params,
batch_stats)``. Linear weights ``[out, in]`` become kernels ``[in, out]``; GRU
``weight_ih`` / ``weight_hh`` ``[3H, ·]`` (gates r, z, n) become the input /
recurrent kernels ``[·, 3H]`` of :class:`jitr.models.gru.GRU`; BatchNorm
``weight`` / ``bias`` / ``running_mean`` / ``running_var`` become ``scale`` /
``bias`` / ``mean`` / ``var`` (``num_batches_tracked`` is not used: momentum is fixed).
"""

from __future__ import annotations

import os
import re
from typing import Any

from jitr.models.torch_state import StateDictReader, load_flat_state_dict, shape_reader

PREFIXES = ("img_enc", "txt_enc", "sim_enc")


def _reader(state_dict: dict[str, Any]) -> StateDictReader:
  return StateDictReader(state_dict, "SGRAF state_dict")


def similarity_module(state_dict: dict[str, Any]) -> tuple[str, int]:
  """``('SGR', steps)`` or ``('SAF', 0)``, read from the ``sim_enc`` keys."""
  steps = {
    int(m.group(1)) for k in state_dict if (m := re.match(r"sim_enc\.SGR_module\.(\d+)\.", k))
  }
  if steps:
    return "SGR", max(steps) + 1
  if any(k.startswith("sim_enc.SAF_module.") for k in state_dict):
    return "SAF", 0
  raise KeyError(
    "SGRAF state_dict: missing key 'sim_enc.SGR_module.0.graph_query_w.weight' "
    "or 'sim_enc.SAF_module.attn_sim_w.weight' (neither SGR nor SAF weights found)"
  )


def params_from_state_dict(state_dict: dict[str, Any]) -> tuple[dict, dict]:
  """Official flat state dict -> ``(params, batch_stats)`` of :class:`SGRAF`."""
  module, steps = similarity_module(state_dict)
  r = _reader(state_dict)
  img_enc = {"fc": r.linear("img_enc.fc")}
  txt_enc = {
    "embed": {"embedding": r.take("txt_enc.embed.weight", 2)},
    "cap_rnn": {
      "forward": r.gru("txt_enc.cap_rnn", ""),
      "backward": r.gru("txt_enc.cap_rnn", "_reverse"),
    },
  }
  v = "sim_enc.v_global_w"
  bn_local, st_local = r.batch_norm(f"{v}.embedding_local.1")
  bn_global, st_global = r.batch_norm(f"{v}.embedding_global.1")
  sim_enc = {
    "v_global_w": {
      "embedding_local": r.linear(f"{v}.embedding_local.0"),
      "bn_local": bn_local,
      "embedding_global": r.linear(f"{v}.embedding_global.0"),
      "bn_global": bn_global,
      "embedding_common": r.linear(f"{v}.embedding_common.0"),
    },
    "t_global_w": {
      name: r.linear(f"sim_enc.t_global_w.{name}.0")
      for name in ("embedding_local", "embedding_global", "embedding_common")
    },
    **{name: r.linear(f"sim_enc.{name}") for name in ("sim_tranloc_w", "sim_tranglo_w")},
    "sim_eval_w": r.linear("sim_enc.sim_eval_w"),
  }
  stats = {"v_global_w": {"bn_local": st_local, "bn_global": st_global}}
  if module == "SGR":
    for k in range(steps):
      sim_enc[f"SGR_module_{k}"] = {
        w: r.linear(f"sim_enc.SGR_module.{k}.{w}")
        for w in ("graph_query_w", "graph_key_w", "sim_graph_w")
      }
  else:
    bn, st = r.batch_norm("sim_enc.SAF_module.bn")
    sim_enc["SAF_module"] = {"attn_sim_w": r.linear("sim_enc.SAF_module.attn_sim_w"), "bn": bn}
    stats["SAF_module"] = {"bn": st}
  r.finish()
  params = {"img_enc": img_enc, "txt_enc": txt_enc, "sim_enc": sim_enc}
  return params, {"sim_enc": stats}


def config_from_state_dict(state_dict: dict[str, Any]) -> dict[str, Any]:
  """The :class:`SGRAF` fields the weights fix: vocab / layer sizes, module, SGR steps."""
  module, steps = similarity_module(state_dict)
  required = ("img_enc.fc.weight", "txt_enc.embed.weight", "sim_enc.sim_eval_w.weight")
  shape = shape_reader(state_dict, "SGRAF state_dict", required)
  embed_dim, img_dim = shape("img_enc.fc.weight")
  vocab_size, word_dim = shape("txt_enc.embed.weight")
  config = dict(
    vocab_size=vocab_size,
    module=module,
    img_dim=img_dim,
    word_dim=word_dim,
    embed_dim=embed_dim,
    sim_dim=shape("sim_enc.sim_eval_w.weight")[1],
    num_region=shape("sim_enc.v_global_w.embedding_local.1.weight")[0],
  )
  if module == "SGR":
    config["sgr_step"] = steps
  return config


def load_official_state_dict(path: str | os.PathLike) -> dict[str, Any]:
  """Reads an official checkpoint (``torch.load(..., weights_only=True)``; only
  ``argparse.Namespace``, the saved ``opt``, is allowed beyond tensors and
  containers) and flattens ``checkpoint['model']`` into ``img_enc.* / txt_enc.* /
  sim_enc.*`` keys. A missing, empty, truncated or damaged file (a zip member failing
  its CRC), a file that is not a ``torch.save`` file and a NaN / inf weight raise
  :class:`jitr.models.official_checkpoint.OfficialCheckpointError`."""
  return load_flat_state_dict(path, PREFIXES, "SGRAF")


def load_official_checkpoint(path: str | os.PathLike) -> tuple[dict, dict]:
  """``(params, batch_stats)`` of the official checkpoint at ``path``; the model's fields
  come from ``config_from_state_dict(load_official_state_dict(path))``."""
  return params_from_state_dict(load_official_state_dict(path))
