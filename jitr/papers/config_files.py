"""Where a jitr command finds a config file: the shipped config files (the package
``jitr.configs`` of an installed jitr, else ``configs/`` beside the ``jitr`` package), and
a ``--config=configs/NAME.py[:ARG]`` (or ``NAME.py``) that names no existing file read as
the shipped ``NAME.py``, so the documented commands work from any directory. Every app's
``--config`` and the runs of a table (:mod:`jitr.papers.run_configs`) resolve it here."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence

import jitr
from jitr import paths


def shipped_configs_dir() -> str:
  """The folder holding the shipped config files: ``jitr.configs``'s (an installed jitr),
  or, where that package cannot be found (a checkout on ``PYTHONPATH``), ``configs``
  beside the ``jitr`` package's folder."""
  try:
    spec = importlib.util.find_spec("jitr.configs")
  except (ImportError, ValueError):
    spec = None
  if spec is not None and spec.submodule_search_locations:
    return list(spec.submodule_search_locations)[0]
  return fallback_configs_dir()


def fallback_configs_dir() -> str:
  """``<folder above the jitr package>/configs``: the configs of a source checkout."""
  return os.path.join(os.path.dirname(os.path.dirname(paths.absolute(jitr.__file__))), "configs")


def shipped_name(path: str) -> str | None:
  """``NAME.py`` when ``path`` is written ``configs/NAME.py`` or ``NAME.py`` (``./`` and
  repeated separators allowed), else None."""
  parts = [p for p in os.path.normpath(path).split(os.sep) if p]
  if parts and parts[-1].endswith(".py") and parts[:-1] in ([], ["configs"]):
    return parts[-1]
  return None


def resolve_config_argument(value: str, configs_dir: str) -> str:
  """``value`` (``PATH[:ARG]``, as ``--config=`` takes it) with PATH replaced by the shipped
  file ``configs_dir/NAME.py`` when PATH does not exist and is written ``configs/NAME.py``
  or ``NAME.py`` and that shipped file exists; otherwise ``value`` unchanged."""
  path, sep, arg = value.partition(":")
  if not path or paths.is_url(path) or paths.exists(path):
    return value
  name = shipped_name(path)
  if name is None or not paths.isfile(os.path.join(configs_dir, name)):
    return value
  return os.path.join(configs_dir, name) + sep + arg


def resolve_config_arguments(argv: Sequence[str], names: Sequence[str], configs_dir: str):
  """``argv`` with the value of every ``--NAME=VALUE`` / ``--NAME VALUE`` (``-NAME`` too)
  of a flag in ``names`` passed through :func:`resolve_config_argument`; ``--`` ends the
  flags."""
  out = list(argv)
  i = 1
  while i < len(out):
    arg = out[i]
    if arg == "--":
      break
    name, eq, value = arg.lstrip("-").partition("=")
    if arg.startswith("-") and name in names:
      if eq:
        out[i] = f"{arg[: len(arg) - len(value)]}{resolve_config_argument(value, configs_dir)}"
      elif i + 1 < len(out):
        out[i + 1] = resolve_config_argument(out[i + 1], configs_dir)
        i += 1
    i += 1
  return out
