"""The hyper-parameters of a BERT encoder, read from a Hugging Face ``config.json``.

:func:`read_config` takes the fields of :class:`BertConfig` from the JSON object (the
first five are required, the rest default to Hugging Face's ``BertConfig`` defaults when
absent) and refuses in one line naming the file and field: a missing file, a file that is
not JSON, ``model_type`` other than ``"bert"``, a missing or invalid field, a
``hidden_act`` other than ``gelu`` / ``gelu_new`` / ``relu`` and a
``position_embedding_type`` other than ``"absolute"``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from jitr import fileio, paths

ACTIVATIONS = ("gelu", "gelu_new", "relu")
"""``hidden_act`` values :class:`~jitr.models.BertEncoder` computes: ``gelu`` is the exact
(erf) GELU, ``gelu_new`` its tanh approximation."""


@dataclasses.dataclass(frozen=True)
class BertConfig:
  """A BERT encoder's shape: ``hidden_size = num_attention_heads · head_dim``, feed-forward
  width ``intermediate_size``, ``num_hidden_layers`` post-LayerNorm layers."""

  vocab_size: int
  hidden_size: int
  num_hidden_layers: int
  num_attention_heads: int
  intermediate_size: int
  hidden_act: str = "gelu"
  hidden_dropout_prob: float = 0.1
  attention_probs_dropout_prob: float = 0.1
  max_position_embeddings: int = 512
  type_vocab_size: int = 2
  layer_norm_eps: float = 1e-12
  pad_token_id: int = 0


_POSITIVE_INTS = (
  "vocab_size",
  "hidden_size",
  "num_hidden_layers",
  "num_attention_heads",
  "intermediate_size",
  "max_position_embeddings",
  "type_vocab_size",
)
_PROBABILITIES = ("hidden_dropout_prob", "attention_probs_dropout_prob")


def _is_int(value: Any) -> bool:
  return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
  return isinstance(value, (int, float)) and not isinstance(value, bool)


def _field_error(path: str, name: str, value: Any, expected: str) -> ValueError:
  return ValueError(f"{path}: field {name!r} is {value!r}, expected {expected}")


def _check_field(path: str, name: str, value: Any) -> None:
  """Raises one line when ``value`` is not valid for field ``name``."""
  if name in _POSITIVE_INTS and not (_is_int(value) and value > 0):
    raise _field_error(path, name, value, "a positive integer")
  if name in _PROBABILITIES and not (_is_number(value) and 0 <= value < 1):
    raise _field_error(path, name, value, "a probability in [0, 1)")
  if name == "layer_norm_eps" and not (_is_number(value) and value > 0):
    raise _field_error(path, name, value, "a positive number")
  if name == "pad_token_id" and not (_is_int(value) and value >= 0):
    raise _field_error(path, name, value, "a non-negative integer")
  if name == "hidden_act" and value not in ACTIVATIONS:
    raise _field_error(path, name, value, f"one of {', '.join(ACTIVATIONS)}")


def config_from_dict(values: dict[str, Any], path: str = "config.json") -> BertConfig:
  """A :class:`BertConfig` from a ``config.json`` object (``path`` names it in errors)."""
  if values.get("model_type") != "bert":
    raise _field_error(path, "model_type", values.get("model_type"), "'bert'")
  position_type = values.get("position_embedding_type", "absolute")
  if position_type != "absolute":
    raise _field_error(path, "position_embedding_type", position_type, "'absolute'")
  kwargs = {}
  for field in dataclasses.fields(BertConfig):
    if field.name not in values or (field.name == "pad_token_id" and values[field.name] is None):
      if field.default is dataclasses.MISSING:
        raise ValueError(f"{path}: missing field {field.name!r} (a BERT config.json has it)")
      continue
    _check_field(path, field.name, values[field.name])
    kwargs[field.name] = values[field.name]
  config = BertConfig(**kwargs)
  if config.hidden_size % config.num_attention_heads:
    raise ValueError(
      f"{path}: field 'hidden_size' is {config.hidden_size}, expected a multiple of "
      f"num_attention_heads = {config.num_attention_heads}"
    )
  return config


def read_config(path: str | os.PathLike) -> BertConfig:
  """The :class:`BertConfig` in a Hugging Face ``config.json`` file."""
  path = os.fspath(path)
  if not paths.isfile(path):
    raise FileNotFoundError(f"{path}: no such file (expected a BERT config.json)")
  values = fileio.read_json(path)
  if not isinstance(values, dict):
    raise ValueError(f"{path}: a JSON {fileio.json_kind(values)}, expected a JSON object")
  return config_from_dict(values, path)
