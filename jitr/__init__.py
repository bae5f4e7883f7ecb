"""jitr: relevance-aware image-text retrieval in JAX/Flax.

The functional API: ``from jitr import losses`` (every loss of Listwise ITR,
CMAL²R, SAM and LSEH as pure functions of a similarity matrix).
"""

from __future__ import annotations

import importlib
from typing import Any

#: The version of this jitr (as in pyproject.toml).
__version__ = "0.1.0"

__all__ = ["losses", "__version__"]


def __getattr__(name: str) -> Any:
  """``jitr.losses``, imported on first use: ``import jitr`` alone (as every app does
  before parsing its flags) loads no JAX."""
  if name == "losses":
    return importlib.import_module("jitr.losses")
  raise AttributeError(f"module 'jitr' has no attribute {name!r}")
