"""A config's fields as the apps' ``--help`` lists them: an indented tree of
``field: default`` with each field's meaning in one column."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _is_group(value: Any) -> bool:
  """Whether ``value`` is a group of fields (a mapping or a ConfigDict)."""
  return isinstance(value, Mapping) or hasattr(value, "items") and hasattr(value, "keys")


def config_tree(
  config: Any, meanings: Mapping[str, str] | None = None, *, indent: int = 2
) -> list[str]:
  """``config`` (a ConfigDict) as lines ``field: default`` (``repr`` of the value), a
  group as ``name:`` with its fields indented below it (an empty one ``name: {}``), each
  followed by its meaning from ``meanings`` (by dotted field) in one column.

  >>> import ml_collections
  >>> c = ml_collections.ConfigDict({"seed": 0, "model": {"embed_dim": 8}})
  >>> print("\\n".join(config_tree(c, {"model.embed_dim": "joint space width"})))
  model:
    embed_dim: 8   joint space width
  seed: 0
  """
  meanings = meanings or {}
  rows: list[tuple[str, str]] = []

  def walk(node: Any, prefix: str, depth: int) -> None:
    for key, value in node.items():
      dotted, pad = f"{prefix}{key}", " " * (indent * depth)
      if _is_group(value):
        rows.append((f"{pad}{key}:" + ("" if len(value) else " {}"), meanings.get(dotted, "")))
        walk(value, f"{dotted}.", depth + 1)
      else:
        rows.append((f"{pad}{key}: {value!r}", meanings.get(dotted, "")))

  walk(config, "", 0)
  width = min(max((len(text) for text, meaning in rows if meaning), default=0), 40)
  return [f"{text.ljust(width)}   {meaning}" if meaning else text for text, meaning in rows]
