"""An app's ``--help``: its module's docstring as plain text, the required flags, absl's
flag listing, then the config fields as a tree with their defaults and meanings and, for a
config-file flag, the shipped config files."""

from __future__ import annotations

import os
import sys
from typing import Any

from absl import flags
from ml_collections.config_flags.config_flags import ConfigFileFlagParser

from jitr.apps._flags import config_dict_default, takes_config_file
from jitr.apps._one_line import config_load_error
from jitr.papers import shipped_configs as _config_files
from jitr.papers.config_files import shipped_configs_dir
from jitr.papers.config_tree import config_tree
from jitr.papers.plain_text import plain_text

# Arguments asking for the help text: True for the app's own flags, False for all flags.
HELP_FLAGS = {"--help": True, "-h": True, "-?": True, "--helpshort": True, "--helpfull": False}


def help_text(app_: Any, argv: list[str], *, short: bool) -> str:
  """``--help`` (``short``: the app's own flags) or ``--helpfull`` of the app ``app_`` (a
  :class:`jitr.apps._cli.App`): the module's docstring as plain text, the required flags,
  absl's flag listing, then the config fields as a tree with their defaults (and meanings:
  :func:`jitr.papers.shipped_configs.file_meanings`) and, for a config-file flag, the shipped
  config files."""
  module = sys.modules[app_.module]
  doc = plain_text(module.__doc__ or f"{app_.name} [flags]").strip("\n")
  parts = [doc + "\n"]
  if app_.requires:
    parts.append("required: " + ", ".join(f"--{n}" for n in app_.requires) + "\n")
  own = [flags.FLAGS[n] for n in app_.own_flags()]
  hidden = [f for f in own if takes_config_file(f) or config_dict_default(f) is not None]
  saved = [f.default_as_str for f in hidden]
  try:  # their defaults are the trees below, not absl's one-line rendering
    for f in hidden:
      f.default_as_str = None
    listing = flags.FLAGS.main_module_help() if short else flags.FLAGS.get_help()
  finally:
    for f, text in zip(hidden, saved, strict=True):
      f.default_as_str = text
  parts.append("flags:\n\n" + listing.strip("\n") + "\n")
  for flag in hidden:
    parts.append("\n".join(_config_help(flag, argv)) + "\n")
  if short:
    parts.append("Try --helpfull to get a list of all flags.\n")
  return "\n".join(parts)


def _config_help(flag: flags.Flag, argv: list[str]) -> list[str]:
  """The help's config section of ``flag``: its fields with their defaults, for a
  config-file flag those of the file given (``--config=FILE`` with ``--help``) or of the
  shipped configs/default.py, and the list of shipped config files."""
  override = f"--{flag.name}.FIELD=VALUE overrides one"
  default = config_dict_default(flag)
  if default is not None:
    return [f"--{flag.name} fields (their defaults; {override}):", *_indented(default, {})]
  configs_dir = shipped_configs_dir()
  shipped_default = os.path.join(configs_dir, "default.py")
  given = [a.split("=", 1)[1] for a in argv[1:] if a.startswith(f"--{flag.name}=")]
  lines, config = [], None
  if given:
    try:
      config = ConfigFileFlagParser(flag.name).parse(given[-1])
      config.get("seed")  # a file that did not load leaves a placeholder raising here
      source = given[-1]
    except Exception as err:  # the help still lists the default config's fields
      lines.append(f"({config_load_error(argv, flag.name, err)})")
      config = None
  if config is None:
    source = shipped_default
    try:
      config = ConfigFileFlagParser(flag.name).parse(shipped_default)
    except Exception as err:  # the help answers even where the config cannot load
      cause = (str(err).strip().splitlines() or [type(err).__name__])[-1]
      lines.append(f"(it did not load: {cause})")
      config = {}
  meanings = _config_files.file_meanings(shipped_default, source.split(":", 1)[0])
  lines.insert(0, f"--{flag.name} fields of {source} (their defaults; {override}):")
  lines += _indented(config, meanings)
  return [*lines, "", *_config_files.shipped_config_lines(configs_dir)]


def _indented(config: Any, meanings: dict[str, str]) -> list[str]:
  """:func:`jitr.papers.config_tree.config_tree` of ``config``, indented two spaces."""
  return ["  " + line for line in config_tree(config, meanings)]
