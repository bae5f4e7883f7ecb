"""An app's command line parsed into absl's flags, every fault of it one line
``NAME: error: ...`` (:func:`jitr.apps._one_line.fail`): an unknown flag, a missing
required flag, a stray argument, a bad value, and a ``--config`` that does not load."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator, Sequence

from absl import flags, logging

from jitr.apps import _one_line
from jitr.apps._flag_names import given_flag_names, unknown_flag_error, unknown_flag_names
from jitr.apps._inputs import flag_meaning


def check_required(name: str, requires: Sequence[str], given: set[str] | None) -> None:
  """Ends the app ``name`` (:func:`jitr.apps._one_line.fail`) naming the first flag of
  ``requires`` missing from ``given`` (names on the command line; None: the parsed flags,
  where an empty value is missing too)."""
  for required in requires:
    flag = flags.FLAGS[required]
    if given is None and flag.value not in (None, ""):
      continue
    if given is not None and (required in given or "flagfile" in given):
      continue
    choices = getattr(flag.parser, "enum_values", None)
    one_of = f" (one of: {', '.join(choices)})" if choices else ""
    _one_line.fail(name, f"--{required} is required: {flag_meaning(flag)}{one_of}")


def parse_command_line(
  name: str,
  argv: list[str],
  given: list[str],
  own: Sequence[str],
  config_files: Sequence[str],
  requires: Sequence[str],
) -> list[str]:
  """``argv`` parsed into absl's flags for the app ``name`` (its flags ``own``, those of them
  that take a config file ``config_files``, the flags it ``requires``; ``given``: the
  command line as typed, for the messages). Returns ``[argv[0]]``."""
  names = given_flag_names(argv)
  unknown = unknown_flag_names(names, config_files)
  if unknown:  # before a missing flag: it may be that flag misspelt
    _one_line.fail(name, unknown_flag_error(unknown[0], own))
  check_required(name, requires, names)  # before a config file is loaded
  rest = parse_flags(name, argv, given, own)
  if len(rest) > 1:
    _one_line.fail(name, f"unexpected argument {rest[1]!r} (flags take the form --name=value)")
  for flag in config_files:
    if flag in names and flags.FLAGS[flag].value is None:
      _one_line.fail(
        name,
        f"{_one_line.given_flag(given, flag)}: get_config() returned None; "
        "expected it to return the config (a ConfigDict)",
      )
  check_required(name, requires, None)
  return rest


@contextlib.contextmanager
def _without_config_loader_warnings() -> Iterator[None]:
  """Drops the warnings ml_collections logs while it loads a config file (``get_config()
  returned None``: the app says it in its own error line, the only one)."""

  def keep(record) -> bool:
    return not record.pathname.endswith("config_flags.py")

  logger = logging.get_absl_logger()
  logger.addFilter(keep)
  try:
    yield
  finally:
    logger.removeFilter(keep)


def parse_flags(name: str, argv: list[str], given: list[str], own: Sequence[str]) -> list[str]:
  """``flags.FLAGS(argv)``: the arguments left, ``[argv[0]]`` and stray ones. A flag error
  ends the app ``name`` with one line: an unknown flag lists the app's flags ``own``; an
  override of a field the config file does not define says "unknown field X" with the
  valid ones; so do a config file that does not compile or load and a
  ``--config=FILE:ARG`` whose ``get_config(ARG)`` raises ``ValueError`` / ``TypeError``
  (``NAME: error: --config=FILE:ARG: MESSAGE``). ``given`` is the command line as typed,
  which the messages quote."""
  flag = "config"
  try:
    with _without_config_loader_warnings():
      return flags.FLAGS(argv)
  except flags.UnrecognizedFlagError as err:
    _one_line.fail(name, unknown_flag_error(err.flagname, own))
  except flags.Error as err:  # absl's own: a value of the wrong type, a missing file
    cause = _one_line.config_function_error(err)
    if cause is not None:  # get_config(ARG) refused ARG: its own message, no traceback
      _one_line.fail(name, f"{_one_line.given_flag(given, flag)}: {' '.join(str(cause).split())}")
    _one_line.fail(name, re.sub(r"^flag (--\S)", r"\1", " ".join(str(err).split())))
  except SyntaxError as err:  # the config file does not compile (or is not UTF-8)
    _one_line.fail(name, _one_line.config_file_error(err))
  except OSError as err:  # an override read the placeholder of a file that did not load
    if "config file" in str(err):
      _one_line.fail(name, _one_line.config_load_error(given, flag, err))
    _one_line.fail(name, f"{type(err).__name__}: {' '.join(str(err).split())}")
  except (AttributeError, KeyError, TypeError) as err:  # TypeError: an override below a value
    if "is not allowed" in str(err):  # --config=X of an app whose config is built in
      _one_line.fail(
        name,
        f"{_one_line.given_flag(given, flag)}: this app's --{flag} is built in; "
        f"--{flag}.FIELD=VALUE overrides one of its fields (--help lists them)",
      )
    _one_line.fail(name, _unknown_override(argv, flag) or f"{type(err).__name__}: {err}")


def _unknown_override(argv: list[str], flag: str) -> str | None:
  """The line of the first override in ``argv`` of a field the ``--FLAG`` config file does
  not have, the file parsed without the overrides; None when there is none or the file
  itself does not load."""
  overrides = {arg for arg, _ in _one_line.override_paths(argv, flag)}
  base = [a for a in argv if a not in overrides]
  saved_argv = sys.argv
  try:  # ml_collections reads the overrides from sys.argv: parse the file alone
    sys.argv = base
    flags.FLAGS(base)
    config = flags.FLAGS[flag].value
  except Exception:  # the config itself does not load: report the original error
    config = None
  finally:
    sys.argv = saved_argv
  return _one_line.first_unknown_override(argv, flag, config)
