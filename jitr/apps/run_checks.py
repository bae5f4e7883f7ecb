"""What ``jitr-train`` checks before it writes anything, and how it writes ``config.json``.

* :func:`check_workdir` -- an existing workdir's ``config.json`` must agree with the
  new config on every field that shapes the model, its optimizer state or the
  data (:data:`SHAPING_FIELDS`); otherwise one error says which and how to start fresh.
* :func:`write_config_once` -- ``config.json`` is written once, atomically, after
  every check passed; a later run (resuming, or with a longer schedule) keeps it.
* :func:`parse_flags_reporting_unknown_fields` -- absl's ``flags_parser`` that turns
  an override of a field the config does not have into "unknown field X" with the
  valid ones, and a config file that does not compile into ``FILE:LINE: ...``.
"""

from __future__ import annotations

import json
import os
import sys
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


def _override_paths(argv: list[str], flag: str) -> list[tuple[str, str]]:
  """``(argument, dotted field)`` of every ``--FLAG.a.b[=value]`` in ``argv``."""
  prefix = f"--{flag}."
  out = []
  for arg in argv[1:]:
    if arg == "--":
      break
    if arg.startswith(prefix):
      out.append((arg, arg[len(prefix) :].split("=", 1)[0]))
  return out


def unknown_field(config: Any, dotted: str) -> str | None:
  """ "unknown field X of config.P (valid: ...)" when ``dotted`` is not a path of ``config``."""
  node, walked = config, "config"
  for key in dotted.split("."):
    keys = list(node.keys()) if hasattr(node, "keys") else []
    if key not in keys:
      valid = ", ".join(sorted(map(str, keys))) or "none: it is a value, not a group"
      return f"unknown field {key!r} of {walked} (valid fields: {valid})"
    node, walked = node[key], f"{walked}.{key}"
  return None


def config_file_error(err: SyntaxError) -> str:
  """``FILE:LINE: cannot load the config file (what, column C)`` of a config that does
  not compile; a non-UTF-8 file is reported as such."""
  what = err.msg
  if "codec can't decode" in what:
    what = "not UTF-8 (" + what.replace("(unicode error) ", "") + ")"
  col = f", column {err.offset}" if err.offset else ""
  return f"{err.filename}:{err.lineno}: cannot load the config file: {what}{col}"


def parse_flags_reporting_unknown_fields(name: str, flag: str = "config"):
  """An absl ``flags_parser`` for ``app.run``: parses as usual, but an override of a field
  the config file does not define exits 1 with one line
  ``NAME: error: --config.X=...: unknown field 'X' of config (valid fields: ...)``."""
  from absl import flags

  def parse(argv: list[str]) -> list[str]:
    try:
      return flags.FLAGS(argv)
    except flags.Error as err:  # absl's own: a value of the wrong type, a missing file
      sys.stderr.write(f"{name}: error: {' '.join(str(err).split())}\n")
      raise SystemExit(1) from None
    except SyntaxError as err:  # the config file does not compile (or is not UTF-8)
      sys.stderr.write(f"{name}: error: {config_file_error(err)}\n")
      raise SystemExit(1) from None
    except (AttributeError, KeyError) as err:
      overrides = _override_paths(argv, flag)
      base = [a for a in argv if not any(a == arg for arg, _ in overrides)]
      saved_argv = sys.argv
      try:  # ml_collections reads the overrides from sys.argv: parse the file alone
        sys.argv = base
        flags.FLAGS(base)
        config = flags.FLAGS[flag].value
      except Exception:  # the config itself does not load: report the original error
        config = None
      finally:
        sys.argv = saved_argv
      for arg, dotted in overrides:
        problem = unknown_field(config, dotted) if config is not None else None
        if problem:
          sys.stderr.write(f"{name}: error: {arg}: {problem}\n")
          raise SystemExit(1) from None
      sys.stderr.write(f"{name}: error: {type(err).__name__}: {err}\n")
      raise SystemExit(1) from None

  return parse
