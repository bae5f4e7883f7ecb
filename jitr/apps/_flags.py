"""The flags several apps share: ``--workdir`` (:func:`workdir_flag`) and a built-in
``--config`` (:func:`config_dict_flag`), a config flag's value (:func:`loaded_config`), and
which kind of config flag a flag is."""

from __future__ import annotations

import sys
from typing import Any

from absl import flags
from ml_collections import config_flags
from ml_collections.config_flags.config_flags import ConfigFileFlagParser

from jitr.apps._one_line import config_load_error, first_unknown_override


def takes_config_file(flag: flags.Flag) -> bool:
  """Whether ``flag`` is an ml_collections config-file flag."""
  return isinstance(flag.parser, ConfigFileFlagParser)


def config_dict_default(flag: flags.Flag) -> Any:
  """The default ConfigDict of an ml_collections config-dict flag, else None."""
  default = flag.default
  return default if hasattr(default, "to_dict") and not takes_config_file(flag) else None


def workdir_flag(help_text: str) -> flags.FlagHolder:
  """The ``--workdir`` flag, defined once even when several apps are imported together."""
  if "workdir" in flags.FLAGS:
    return flags.FlagHolder(flags.FLAGS, flags.FLAGS["workdir"])
  return flags.DEFINE_string("workdir", None, help_text)


def config_dict_flag(app_name: str, default, help_text: str) -> flags.FlagHolder:
  """``--config``: an ml_collections ConfigDict flag with ``default`` (``--config.a.b=v``
  overrides). ml_collections applies the overrides of ``sys.argv`` when the flag is
  defined, so an override of a field ``default`` does not have exits 1 here with one line
  ``NAME: error: --config.X=...: unknown field 'X' of config (valid fields: ...)``."""
  try:
    return config_flags.DEFINE_config_dict("config", default, help_text)
  except (AttributeError, KeyError, TypeError, ValueError) as err:
    problem = first_unknown_override(sys.argv, "config", default)
    if problem is None:
      problem = f"--config: {type(err).__name__}: {err}"
    sys.stderr.write(f"{app_name}: error: {problem}\n")
    raise SystemExit(1) from None


def loaded_config(holder: flags.FlagHolder):
  """``holder``'s ConfigDict; a file that does not load is one ``ValueError`` line
  (ml_collections' message spans several lines; its last names the cause)."""
  config = holder.value
  try:  # a file that failed to load leaves a placeholder that raises on first use
    config.get("seed")
    return config
  except Exception as err:
    raise ValueError(config_load_error(sys.argv, holder.name, err)) from None
