"""A PyTorch state dict from a user's weights file, read without running anything in it.

``.safetensors`` is read with the safetensors numpy API; any other file (``.pt``,
``.bin``, ``.pth``) with the weights-only loader of
:func:`~jitr.models.official_checkpoint.load_checkpoint` (torch is imported only then; a
pickle that would build other objects or call functions is refused in one line). A
training checkpoint's ``{"state_dict": ...}`` is unwrapped and its ``module.`` prefix
(DistributedDataParallel) dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from jitr import paths
from jitr.models.official_checkpoint import RefusedGlobalError, load_checkpoint


def as_numpy(value: Any) -> np.ndarray:
  """A state dict's tensor as numpy: a torch tensor through float32 when it is floating
  (bfloat16 has no numpy dtype), anything else through ``np.asarray``."""
  if hasattr(value, "detach"):  # a torch.Tensor
    value = value.detach().cpu()
    return (value.float() if value.is_floating_point() else value).numpy()
  return np.asarray(value)


def read_state_file(path: str, what: str) -> Mapping[str, Any]:
  """The state dict in ``path``; ``what`` names the expected content in error lines (e.g.
  ``"an open_clip state dict"``)."""
  if not paths.isfile(path):
    raise FileNotFoundError(f"{path}: no such file (expected {what})")
  if path.endswith(".safetensors"):
    from safetensors.numpy import load

    with paths.open(path, "rb") as f:
      data = f.read()
    try:
      return load(data)
    except Exception as err:  # safetensors raises its own error types
      reason = " ".join(str(err).split())
      raise ValueError(f"{path}: not a readable safetensors file ({reason})") from None
  try:
    state = load_checkpoint(path)
  except RefusedGlobalError as err:  # a pickle that would build objects or call functions
    raise ValueError(
      f"{path}: not a weights-only PyTorch state dict (it holds {err.refused!r}, which jitr "
      f"does not unpickle); expected {what}"
    ) from None
  if isinstance(state, Mapping) and isinstance(state.get("state_dict"), Mapping):
    state = state["state_dict"]
  if not isinstance(state, Mapping):
    raise ValueError(f"{path}: holds a {type(state).__name__}, expected {what}")
  if state and all(str(k).startswith("module.") for k in state):
    state = {k[len("module.") :]: v for k, v in state.items()}
  return state
