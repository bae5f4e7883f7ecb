"""A workdir's files that describe its run: ``config.json`` and where its data lives.

* :func:`check_workdir` -- an existing workdir's ``config.json`` must agree with the
  new config on every field that shapes the model, its optimizer state or the
  data (:data:`SHAPING_FIELDS`); otherwise one error says which and how to start fresh.
* :func:`write_config_once` -- ``config.json`` is written once, atomically, after
  every check passed; a later run (resuming, or with a longer schedule) keeps it.
* :func:`read_workdir_config` -- the saved config of a workdir.
* :func:`data_dir` -- where a run keeps its TFDS data, relevance records and compile cache.
"""

from __future__ import annotations

import json
import os
from typing import Any

from jitr import fileio

CONFIG_NAME = "config.json"

# Dotted config paths whose change makes a workdir's checkpoints or data unusable.
SHAPING_FIELDS = (
  "dataset",
  "shapes_config",
  "precomp_root",
  "test_split",
  "vocab_min_count",
  "max_caption_len",
  "batch_size",
  "model",
  "optimizer.name",
)

_MISSING = object()


def _get(tree: Any, dotted: str) -> Any:
  for key in dotted.split("."):
    if not isinstance(tree, dict) or key not in tree:
      return _MISSING
    tree = tree[key]
  return tree


def _differences(old: Any, new: Any, path: str) -> list[str]:
  """``path=old -> new`` for every leaf that differs (dicts compared key by key)."""
  if isinstance(old, dict) and isinstance(new, dict):
    out = []
    for key in sorted(set(old) | set(new)):
      out += _differences(old.get(key, _MISSING), new.get(key, _MISSING), f"{path}.{key}")
    return out
  if isinstance(old, list | tuple) and isinstance(new, list | tuple):
    old, new = list(old), list(new)
  if old == new:
    return []
  show = lambda v: "(absent)" if v is _MISSING else json.dumps(v)
  return [f"{path}={show(old)} (this config: {show(new)})"]


def read_workdir_config(workdir: str) -> dict[str, Any] | None:
  """``workdir/config.json`` as a dict, ``None`` if absent.

  Raises:
    ValueError: the file is not UTF-8 JSON of an object (names the file and line).
  """
  path = os.path.join(workdir, CONFIG_NAME)
  if not os.path.isfile(path):
    return None
  saved = fileio.read_json(path)
  if not isinstance(saved, dict):
    raise ValueError(f"{path}: expected a JSON object, got {type(saved).__name__}")
  return saved


def check_workdir(config: Any, workdir: str) -> None:
  """Raises ``ValueError`` when ``workdir`` was trained with a config that differs on a
  :data:`SHAPING_FIELDS` field: "workdir X was trained with F=old (this config: new); use a
  new --workdir or delete it"."""
  saved = read_workdir_config(workdir)
  if saved is None:
    return
  new = json.loads(config.to_json_best_effort())
  diffs = []
  for field in SHAPING_FIELDS:
    diffs += _differences(_get(saved, field), _get(new, field), field)
  if diffs:
    raise ValueError(
      f"workdir {workdir} was trained with {'; '.join(diffs)}; use a new --workdir or delete it"
    )


def write_config_once(config: Any, workdir: str) -> bool:
  """Writes ``workdir/config.json`` atomically unless it exists; returns whether it wrote."""
  path = os.path.join(workdir, CONFIG_NAME)
  if os.path.exists(path):
    return False
  fileio.write_text_atomic(path, config.to_json_best_effort(indent=2))
  return True


def data_dir(config: Any, workdir: str) -> str:
  """``config.data_dir`` or ``<workdir>/../tfds`` (shared between runs)."""
  return config.data_dir or os.path.join(os.path.dirname(os.path.abspath(workdir)), "tfds")
