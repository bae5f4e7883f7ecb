"""Config files that read each other: ``jitr-train --config=configs/NAME.py`` loads a config
file by its path, from any directory, so the folder of config files need not be importable
(``from configs import default`` fails under the console scripts). A config file loads its
siblings with :func:`sibling_config` instead."""

from __future__ import annotations

import importlib.util
import pathlib
import types


def sibling_config(config_file: str, name: str) -> types.ModuleType:
  """The config file ``NAME.py`` of ``config_file``'s folder, loaded by path (as the module
  ``jitr_configs_NAME``); ``config_file``: the loading file's ``__file__``."""
  path = pathlib.Path(config_file).with_name(f"{name}.py")
  spec = importlib.util.spec_from_file_location(f"jitr_configs_{name}", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module
