"""How many layers each CLIP / SigLIP parameter lies below its tower's output, for
layer-wise learning-rate decay: a parameter ``r`` layers down learns at ``lr · decay^r``
(:func:`!jitr.training.optimizer.make_optimizer`, ``config.optimizer.layer_decay``).

As timm's ``param_groups_layer_decay`` (BEiT's recipe) groups a ViT, per tower of ``L``
blocks: the stem (patch or token embedding, class token, positions, ``ln_pre``) is layer 0,
block ``i`` layer ``i + 1``, the final norm (``ln_post``, ``ln_final``, the trunk's
``norm``) with the last block, layer ``L``, and the head (projection, SigLIP's
attention-pool head) layer ``L + 1``; ``r = L + 1 − layer``. ``logit_scale`` and
``logit_bias`` sit at the output (``r = 0``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax

TOWERS = ("visual", "text")
#: A tower's stem: its parameters sit below every block.
STEM = frozenset({"patch_embed", "class_embedding", "pos_embed", "ln_pre", "token_embedding"})
#: A tower's final norm: grouped with its last block (timm's ``norm``).
FINAL_NORMS = frozenset({"ln_post", "ln_final", "norm"})
BLOCK_PREFIX = "block_"


def _constant(tree: Any, rank: int) -> Any:
  return jax.tree.map(lambda _: rank, tree)


def _tower_ranks(tower: Mapping[str, Any]) -> dict[str, Any]:
  blocks = tower["transformer"]
  depth = len(blocks)
  out: dict[str, Any] = {}
  for name, sub in tower.items():
    if name == "transformer":
      out[name] = {
        block: _constant(value, depth - int(block.removeprefix(BLOCK_PREFIX)))
        for block, value in sub.items()
      }
    elif name in STEM:
      out[name] = _constant(sub, depth + 1)
    else:
      out[name] = _constant(sub, 1 if name in FINAL_NORMS else 0)
  return out


def layer_ranks(params: Mapping[str, Any]) -> dict[str, Any]:
  """The tree of ``params`` (a :class:`~jitr.models.ClipModel`'s) with each leaf replaced
  by its rank ``r`` (module docstring): ``L + 1`` for a tower's stem, ``L − i`` for its
  block ``i``, 1 for its final norm, 0 for its head and the logit scale and bias."""
  return {
    key: _tower_ranks(value) if key in TOWERS else _constant(value, 0)
    for key, value in params.items()
  }
