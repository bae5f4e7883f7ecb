"""An app's faults in one line: bad input ends it with ``NAME: error: ...`` and exit status
1, a Ctrl-C with ``NAME: interrupted ...`` and :data:`INTERRUPTED_EXIT_STATUS`, never a
traceback (:func:`fail`, :func:`run_reporting_bad_input`); and the lines of a ``--config``
that does not load: a file that does not load (:func:`config_load_error`) or compile
(:func:`config_file_error`), a ``get_config(ARG)`` that refused its argument
(:func:`config_function_error`), an override of a field the config does not have
(:func:`unknown_field`)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any, NoReturn

from jitr.apps.interrupts import INTERRUPTED_EXIT_STATUS
from jitr.papers.shipped_configs import shipped_names


def fail(name: str, message: str) -> NoReturn:
  """Ends the app ``name`` with one line ``NAME: error: MESSAGE`` on stderr, exit status 1."""
  sys.stderr.write(f"{name}: error: {message}\n")
  raise SystemExit(1)


def run_reporting_bad_input(
  name: str, body: Callable[[], Any], *, interrupted: str = "interrupted (Ctrl-C)"
) -> Any:
  """Runs ``body`` and returns its result; bad input (``ValueError``/``OSError``) exits 1
  with one line ``NAME: error: ...``; Ctrl-C (``KeyboardInterrupt``) exits
  :data:`INTERRUPTED_EXIT_STATUS` with one line ``NAME: `` + ``interrupted`` (no traceback)."""
  try:
    return body()
  except (ValueError, OSError) as err:
    # a library's asynchronous reads that the error left pending (orbax's checkpoint
    # metadata) would warn at exit, after the one line: they are not the app's fault
    warnings.filterwarnings("ignore", r"coroutine .* was never awaited", RuntimeWarning)
    raise SystemExit(f"{name}: error: {err}") from err
  except KeyboardInterrupt:
    sys.stderr.write(f"{name}: {interrupted}\n")
    raise SystemExit(INTERRUPTED_EXIT_STATUS) from None


def given_flag(argv: list[str], flag: str) -> str:
  """The last ``--FLAG=VALUE`` argument of ``argv`` (``--FLAG`` when there is none)."""
  given = [a for a in argv[1:] if a.startswith(f"--{flag}=")]
  return given[-1] if given else f"--{flag}"


def config_load_error(argv: list[str], flag: str, err: BaseException) -> str:
  """``--FLAG=FILE: could not load the config file: CAUSE`` of a config file that did not
  load; CAUSE is the last line of ml_collections' several-line message (e.g. ``[Errno 2]
  No such file or directory: 'FILE'``), and a file not found is told the shipped ones."""
  cause = [line.strip() for line in str(err).splitlines() if line.strip()]
  last = cause[-1] if cause else type(err).__name__
  if "No such file" in last:
    last += f"; expected a config file, e.g. one of the shipped {shipped_names()}"
  return f"{given_flag(argv, flag)}: could not load the config file: {last}"


def config_function_error(err: BaseException) -> BaseException | None:
  """The error a config file's ``get_config(ARG)`` raised (e.g. a ``configs/shapes.py:NAME``
  whose NAME is not a variant) when ``err`` is absl's flag error wrapping it, else None.

  ml_collections re-raises it with the whole traceback as its message; absl wraps that
  again: the original is the innermost exception of the chain.
  """
  if "Error whilst parsing config file" not in str(err):
    return None
  inner = err
  while True:  # the chain a traceback would print: causes, and contexts not suppressed
    below = inner.__cause__ or (None if inner.__suppress_context__ else inner.__context__)
    if below is None:
      return inner if inner is not err else None
    inner = below


def override_paths(argv: list[str], flag: str) -> list[tuple[str, str]]:
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
      if keys:
        valid = ", ".join(sorted(map(str, keys)))
      elif hasattr(node, "keys"):  # a group this config leaves empty, e.g. config.graded
        valid = (
          f"none: {walked} is empty in this config file and an override cannot add a "
          f"field; set {walked}.{key} in the config file"
        )
      else:
        valid = "none: it is a value, not a group"
      return f"unknown field {key!r} of {walked} (valid fields: {valid})"
    node, walked = node[key], f"{walked}.{key}"
  return None


def first_unknown_override(argv: list[str], flag: str, config: Any) -> str | None:
  """``--FLAG.X=...: unknown field ...`` of the first override in ``argv`` of a field
  ``config`` does not have (:func:`unknown_field`), else None."""
  for arg, dotted in override_paths(argv, flag):
    problem = unknown_field(config, dotted) if config is not None else None
    if problem:
      return f"{arg}: {problem}"
  return None


def config_file_error(err: SyntaxError) -> str:
  """``FILE:LINE: cannot load the config file (what, column C)`` of a config that does
  not compile; a non-UTF-8 file is reported as such."""
  what = err.msg
  if "codec can't decode" in what:
    what = "not UTF-8 (" + what.replace("(unicode error) ", "") + ")"
  col = f", column {err.offset}" if err.offset else ""
  return f"{err.filename}:{err.lineno}: cannot load the config file: {what}{col}"
