"""Checks of ``config.model`` against the keyword arguments of the network it names.

Each network's settings are the keyword arguments of its builder (the signature of
:func:`jitr.models.create_dual_encoder`, the fields of :class:`jitr.models.SGRAF` and
:class:`jitr.models.VSRN` and :class:`jitr.models.CVSE`, plus VSRN's ``caption_weight`` and
``dataset`` and CVSE's loss weights, evaluation mix and graph threshold); a setting's
type is its default's: a bool takes ``True``/``False``, a whole number an ``int`` (not a
bool), a real number any finite ``int`` or ``float``, a string a ``str``, a tuple a list or
tuple. Settings whose default is ``None`` or an object (``dtype``) are not checked here.

A whole-number setting is a size or a count of the network (``embed_dim``, ``word_dim``,
``num_region``, ``block_size``, ``bert_heads``, ...) and must be at least 1; the counts of
repeated layers or steps (:data:`MAY_BE_ZERO`: SGR's ``sgr_step``, VSRN's ``gcn_layers``,
the BERT's ``bert_layers``, CLIP's ``max_layers``) may be 0: none, or (``max_layers``) all.
A string setting of :data:`MAY_BE_OBJECT` (CLIP's ``tower``: a name or an open_clip model
config) also takes an object, checked by the network when it is built.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Mapping
from typing import Any

from jitr.models.registry import MODELS, network_name

# Keyword arguments that are not settings of a config (given by the builder or by Flax).
NOT_SETTINGS = frozenset({"vocab_size", "module", "parent", "name", "axis_name"})
# Whole-number settings that count repeated layers or steps: 0 builds the network without
# them. Every other whole-number setting is a size and must be at least 1.
MAY_BE_ZERO = frozenset({"sgr_step", "gcn_layers", "bert_layers", "max_layers"})
# String settings that may instead be an object (CLIP's tower: its open_clip model config).
MAY_BE_OBJECT = frozenset({"tower"})


def settings_networks() -> list[str]:
  """The registered networks whose settings are known (a :attr:`!Network.settings_of`), by
  name, read from the registry when asked (a network registered later is included)."""
  return sorted(name for name, network in MODELS.items() if network.settings_of)


def model_settings(name: str) -> dict[str, Any]:
  """``{setting: default}`` of network ``name`` (one of :func:`settings_networks`): the
  keyword arguments of its :attr:`!Network.settings_of`, then its
  :attr:`!Network.extra_settings`."""
  network = MODELS[name]
  params = inspect.signature(network.settings_of).parameters
  settings = {
    key: p.default
    for key, p in params.items()
    if key not in NOT_SETTINGS and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
  }
  return {**settings, **network.extra_settings}


def expected_kind(default: Any) -> str | None:
  """What a setting whose default is ``default`` takes (``"True or False"``, ``"a whole
  number"``, ``"a finite number"``, ``"a string"``, ``"a list"``), or ``None`` when its
  type is not checked."""
  if isinstance(default, bool):
    return "True or False"
  if isinstance(default, int):
    return "a whole number"
  if isinstance(default, float):
    return "a finite number"
  if isinstance(default, str):
    return "a string"
  if isinstance(default, tuple):
    return "a list"
  return None


def has_kind(value: Any, kind: str) -> bool:
  """Whether ``value`` is ``kind`` (one of :func:`expected_kind`'s answers)."""
  if kind == "True or False":
    return isinstance(value, bool)
  if isinstance(value, bool):
    return False
  if kind == "a whole number":
    return isinstance(value, int)
  if kind == "a finite number":
    return isinstance(value, numbers.Real) and math.isfinite(float(value))
  if kind == "a string":
    return isinstance(value, str)
  if kind == "a string or an object":
    return isinstance(value, (str, Mapping)) or hasattr(value, "keys")
  return isinstance(value, (list, tuple))


def smallest_value(key: str) -> int:
  """The smallest valid value of the whole-number setting ``key``: 0 for the counts of
  :data:`MAY_BE_ZERO`, 1 for every size."""
  return 0 if key in MAY_BE_ZERO else 1


def check_model_settings(model: Any, field: str = "config.model") -> None:
  """Raises ``ValueError`` naming the first bad part of ``model`` (``config.model``): not
  an object, a ``name`` that is not a network (:func:`settings_networks`), a setting the
  network does not have (the known ones listed), a value of the wrong type
  (:func:`expected_kind`), or a whole number below :func:`smallest_value` (a size of 0
  or below)."""
  if not isinstance(model, Mapping) and not hasattr(model, "keys"):
    raise ValueError(
      f"{field}: expected an object of model settings, got {model!r} ({type(model).__name__})"
    )
  name = network_name(model)
  known = settings_networks()
  if name not in known:
    raise ValueError(f"{field}.name: expected one of {known}, got {name!r}")
  settings = model_settings(name)
  for key in model.keys():
    if key == "name":
      continue
    if key not in settings:
      raise ValueError(
        f"{field}.{key}: not a setting of the {name!r} network; expected one of "
        f"{', '.join(sorted(settings))}"
      )
    kind = expected_kind(settings[key])
    if kind == "a string" and key in MAY_BE_OBJECT:
      kind = "a string or an object"
    value = model[key]
    if kind is not None and not has_kind(value, kind):
      raise ValueError(f"{field}.{key}: expected {kind}, got {value!r} ({type(value).__name__})")
    if kind == "a whole number" and value < smallest_value(key):
      what = "a count of layers or steps" if key in MAY_BE_ZERO else "a size or count"
      raise ValueError(
        f"{field}.{key}: expected a whole number >= {smallest_value(key)}, got {value} "
        f"({what} of the {name!r} network)"
      )
