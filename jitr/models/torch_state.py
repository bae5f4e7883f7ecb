"""Reading official PyTorch checkpoints: one flat state dict, popped key by key.

Shared by the SGRAF and VSRN converters. Linear weights ``[out, in]`` and 1×1
Conv1d weights ``[out, in, 1]`` become Flax kernels ``[in, out]``; GRU
``weight_ih`` / ``weight_hh`` ``[3H, ·]`` (gates r, z, n) become the input /
recurrent kernels ``[·, 3H]`` of :class:`jitr.models.gru.GRU`; BatchNorm
``weight, bias, running_mean, running_var`` become ``scale, bias, mean, var``
(``num_batches_tracked`` is not used: the momentum is fixed).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from jitr.models.official_checkpoint import (
  OfficialCheckpointError,
  load_checkpoint,
  refuse_non_finite,
)

_UNUSED = re.compile(r".*\.num_batches_tracked$")


class StateDictReader:
  """Pops keys from a state dict, with one clear error per missing, unexpected or
  wrong-rank key; ``name`` (e.g. ``"SGRAF state_dict"``) starts every message."""

  def __init__(self, state_dict: dict[str, Any], name: str):
    self.name = name
    self.state = {k: self._float32(k, v) for k, v in state_dict.items() if not _UNUSED.match(k)}

  def _float32(self, key: str, value: Any) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch.Tensor
      value = value.detach().cpu().numpy()
    array = np.asarray(value)
    if not np.issubdtype(array.dtype, np.floating):
      raise ValueError(f"{self.name}: {key!r} must be a float tensor, got {array.dtype}")
    return array.astype(np.float32)

  def take(self, key: str, ndim: int) -> np.ndarray:
    if key not in self.state:
      raise KeyError(f"{self.name}: missing key {key!r}")
    value = self.state.pop(key)
    if value.ndim != ndim:
      raise ValueError(f"{self.name}: {key!r} must have {ndim} dims, got {value.shape}")
    return value

  def linear(self, prefix: str, bias: bool = True) -> dict[str, np.ndarray]:
    out = {"kernel": self.take(f"{prefix}.weight", 2).T}
    if bias:
      out["bias"] = self.take(f"{prefix}.bias", 1)
    return out

  def conv1x1(self, prefix: str) -> dict[str, np.ndarray]:
    weight = self.take(f"{prefix}.weight", 3)
    if weight.shape[2] != 1:
      raise ValueError(
        f"{self.name}: {prefix + '.weight'!r} must be a 1x1 conv, got {weight.shape}"
      )
    return {"kernel": weight[:, :, 0].T, "bias": self.take(f"{prefix}.bias", 1)}

  def batch_norm(self, prefix: str) -> tuple[dict, dict]:
    params = {"scale": self.take(f"{prefix}.weight", 1), "bias": self.take(f"{prefix}.bias", 1)}
    stats = {
      "mean": self.take(f"{prefix}.running_mean", 1),
      "var": self.take(f"{prefix}.running_var", 1),
    }
    return params, stats

  def gru(self, prefix: str, suffix: str = "") -> dict:
    """One GRU direction of layer 0 (``suffix="_reverse"`` for the backward one)."""
    return {
      "input": {
        "kernel": self.take(f"{prefix}.weight_ih_l0{suffix}", 2).T,
        "bias": self.take(f"{prefix}.bias_ih_l0{suffix}", 1),
      },
      "recurrent_kernel": self.take(f"{prefix}.weight_hh_l0{suffix}", 2).T,
      "recurrent_bias": self.take(f"{prefix}.bias_hh_l0{suffix}", 1),
    }

  def finish(self) -> None:
    if self.state:
      raise KeyError(f"{self.name}: unexpected keys {sorted(self.state)}")


def shape_reader(
  state_dict: Mapping[str, Any], name: str, required: Sequence[str]
) -> Callable[[str], tuple[int, ...]]:
  """``shape(key)``: the shape of ``state_dict[key]``, once every key of ``required`` was
  found (``KeyError`` ``"NAME: missing key 'K'"`` for the first one absent)."""
  for key in required:
    if key not in state_dict:
      raise KeyError(f"{name}: missing key {key!r}")
  return lambda key: tuple(np.shape(state_dict[key]))


def flatten_state_dicts(
  path: str | os.PathLike, parts: Any, prefixes: Sequence[str]
) -> dict[str, Any] | None:
  """``{f"{prefix}.{key}": value}`` of ``parts`` (``checkpoint['model']``: one state dict per
  prefix), or ``None`` when ``parts`` is not a list of that many state dicts. A state dict
  saved from an ``nn.DataParallel`` (every key ``module.``-prefixed, as VSE∞'s ``train.py``
  saves its towers) loses that prefix. A NaN / inf weight raises
  :class:`OfficialCheckpointError` naming ``path``."""
  if (
    not isinstance(parts, (list, tuple))
    or len(parts) != len(prefixes)
    or not all(isinstance(sd, Mapping) for sd in parts)
  ):
    return None
  flat = {
    f"{p}.{k}": v for p, sd in zip(prefixes, parts) for k, v in without_data_parallel(sd).items()
  }
  refuse_non_finite(path, flat)
  return flat


_DATA_PARALLEL = "module."


def without_data_parallel(state_dict: Mapping[str, Any]) -> Mapping[str, Any]:
  """``state_dict`` without the ``module.`` prefix ``nn.DataParallel`` gives every key, when
  every key has it; else unchanged."""
  if not state_dict or not all(k.startswith(_DATA_PARALLEL) for k in state_dict):
    return state_dict
  return {k[len(_DATA_PARALLEL) :]: v for k, v in state_dict.items()}


def load_flat_state_dict(
  path: str | os.PathLike, prefixes: Sequence[str], model: str
) -> dict[str, Any]:
  """``checkpoint['model']`` (a list of state dicts, one per prefix) as one flat dict.

  Reads with :func:`jitr.models.official_checkpoint.load_checkpoint`: the file's layout
  is checked first (zip: every member's CRC; legacy: every pickle complete), then
  ``torch.load(..., weights_only=True)`` allows only ``argparse.Namespace`` (the saved
  ``opt``) beyond tensors and containers, so nothing else is unpickled. A missing,
  empty, truncated, damaged or foreign file, a refused global, a checkpoint of another
  layout and a NaN / inf weight raise :class:`OfficialCheckpointError` (one line, the path).
  """
  checkpoint = load_checkpoint(path)
  parts = checkpoint.get("model") if isinstance(checkpoint, dict) else None
  flat = flatten_state_dicts(path, parts, prefixes)
  if flat is None:
    raise OfficialCheckpointError(
      f"{os.fspath(path)}: expected an official {model} checkpoint, a dict whose 'model' "
      f"is the list [{', '.join(prefixes)}] of state dicts"
    )
  return flat
