"""What every jitr absl main shares: one-line errors, ``--workdir``, ``--config`` parsing.

* :func:`run_reporting_bad_input` -- bad input exits 1 with one ``NAME: error: ...`` line,
  Ctrl-C exits :data:`INTERRUPTED_EXIT_STATUS` with one ``NAME: interrupted ...`` line.
* :func:`parse_flags_reporting_unknown_fields` -- absl's ``flags_parser`` that turns
  an override of a field the config does not have into "unknown field X" with the
  valid ones, a config file that does not compile into ``FILE:LINE: ...``, one that does
  not load (also with overrides) into ``--config=FILE: could not load ...`` and an
  argument its ``get_config`` refuses into that function's own message.
* :func:`loaded_config` -- a ``--config`` flag's ConfigDict, or one line saying why
  the file did not load.
* :func:`run_app` -- ``app.run`` whose ``--help`` lists the app module's own flags (and its
  docstring), also when it is started through a console script.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from absl import app, flags, logging
from ml_collections import config_flags

from jitr import progress

# Exit status of a command stopped by Ctrl-C (SIGINT): 128 + 2, as the shells report it.
INTERRUPTED_EXIT_STATUS = 130

# A line logged through a progress line's wrap_log (jitr.progress) names the function that
# logged it, not jitr/progress.py.
logging.ABSLLogger.register_frame_to_skip(progress.__file__, "log_around_line")


def run_reporting_bad_input(
  name: str, body: Callable[[], Any], *, interrupted: str = "interrupted (Ctrl-C)"
) -> Any:
  """Runs ``body`` and returns its result; bad input (``ValueError``/``OSError``) exits 1
  with one line ``NAME: error: ...``; Ctrl-C (``KeyboardInterrupt``) exits
  :data:`INTERRUPTED_EXIT_STATUS` with one line ``NAME: `` + ``interrupted`` (no traceback)."""
  try:
    return body()
  except (ValueError, OSError) as err:
    raise SystemExit(f"{name}: error: {err}") from err
  except KeyboardInterrupt:
    sys.stderr.write(f"{name}: {interrupted}\n")
    raise SystemExit(INTERRUPTED_EXIT_STATUS) from None


def join_configured_job(settings: Any):
  """:func:`jitr.training.distributed.join_job` with a config's ``distributed`` fields
  (absent ones unset: the job JAX detects, or a single process)."""
  from jitr.training import distributed  # JAX loads only when an app runs

  return distributed.join_job(
    settings.get("coordinator_address", ""),
    settings.get("num_processes", 0),
    settings.get("process_id", -1),
    heartbeat_timeout_s=settings.get("heartbeat_timeout_s", 100),
  )


def exit_lost_process(name: str, error: BaseException) -> None:
  """Ends a process of a multi-process job whose collective failed (another process died or
  was killed): one line ``NAME: error: ...`` and exit status 1 at once, without JAX's
  shutdown barrier, which would wait for the lost process and then abort."""
  first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
  sys.stderr.write(
    f"{name}: error: a collective with the other processes of the job failed ({first}); "
    "another process probably stopped: see its log\n"
  )
  sys.stderr.flush()
  sys.stdout.flush()
  os._exit(1)


@contextlib.contextmanager
def ending_on_a_lost_process(name: str, process_count: int) -> Iterator[None]:
  """Runs the block; a failed collective (``jax.errors.JaxRuntimeError``) in a job of
  several processes ends this one with :func:`exit_lost_process`. In a single process the
  error goes on as raised."""
  import jax  # here, not at the top: the apps' --help answers without loading JAX

  try:
    yield
  except jax.errors.JaxRuntimeError as error:
    if process_count == 1:
      raise
    exit_lost_process(name, error)


# Arguments asking for the help text: True for the app's own flags, False for all flags.
_HELP_FLAGS = {"--help": True, "-h": True, "-?": True, "--helpshort": True, "--helpfull": False}


def run_app(module_name: str, main: Callable[[list[str]], Any], **kwargs: Any) -> None:
  """``app.run(main, **kwargs)`` with the flags of module ``module_name`` shown by ``--help``.

  absl's ``--help`` lists the key flags of the program ``sys.argv[0]`` only; a console
  script is not the module that defines the flags, so its ``--help`` would list none. The
  module's flags -- the ones it defines and every ``FlagHolder`` among its globals (such as
  ``--workdir`` and ``--config`` defined through this module) -- become key flags of the
  program, and the module's docstring its usage text when the program has none.
  ``--help`` (``-h``, ``--helpshort``) and ``--helpfull`` print the help and exit 0.
  """
  module = sys.modules[module_name]
  names = [flag.name for flag in flags.FLAGS.get_key_flags_for_module(module_name)]
  names += [v.name for v in vars(module).values() if isinstance(v, flags.FlagHolder)]
  for name in dict.fromkeys(names):
    if name in flags.FLAGS:
      flags.FLAGS.register_key_flag_for_module(sys.argv[0], flags.FLAGS[name])
  main_module = sys.modules.get("__main__")
  if main_module is not None and not main_module.__doc__ and module.__doc__:
    main_module.__doc__ = module.__doc__
  args = sys.argv[1 : sys.argv.index("--") if "--" in sys.argv else len(sys.argv)]
  asked = [arg for arg in args if arg in _HELP_FLAGS]
  if asked:  # absl exits 1 after printing the help; asking for it is no error
    short = _HELP_FLAGS[asked[0]]
    app.usage(shorthelp=short, writeto_stdout=True)
    if short:
      print("Try --helpfull to get a list of all flags.")
    raise SystemExit(0)
  app.run(main, **kwargs)


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
    for arg, dotted in _override_paths(sys.argv, "config"):
      problem = unknown_field(default, dotted)
      if problem:
        sys.stderr.write(f"{app_name}: error: {arg}: {problem}\n")
        raise SystemExit(1) from None
    sys.stderr.write(f"{app_name}: error: --config: {type(err).__name__}: {err}\n")
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


def _given_flag(argv: list[str], flag: str) -> str:
  """The last ``--FLAG=VALUE`` argument of ``argv`` (``--FLAG`` when there is none)."""
  given = [a for a in argv[1:] if a.startswith(f"--{flag}=")]
  return given[-1] if given else f"--{flag}"


def config_load_error(argv: list[str], flag: str, err: BaseException) -> str:
  """``--FLAG=FILE: could not load the config file: CAUSE`` of a config file that did not
  load; CAUSE is the last line of ml_collections' several-line message (e.g. ``[Errno 2]
  No such file or directory: 'FILE'``)."""
  cause = [line.strip() for line in str(err).splitlines() if line.strip()]
  return (
    f"{_given_flag(argv, flag)}: could not load the config file: "
    f"{cause[-1] if cause else type(err).__name__}"
  )


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
  ``NAME: error: --config.X=...: unknown field 'X' of config (valid fields: ...)``; so do a
  config file that does not compile or load (:func:`config_file_error`,
  :func:`config_load_error`) and a ``--config=FILE:ARG`` whose ``get_config(ARG)`` raises
  ``ValueError`` / ``TypeError`` (``NAME: error: --config=FILE:ARG: MESSAGE``)."""

  def parse(argv: list[str]) -> list[str]:
    try:
      return flags.FLAGS(argv)
    except flags.Error as err:  # absl's own: a value of the wrong type, a missing file
      cause = config_function_error(err)
      if cause is not None:  # get_config(ARG) refused ARG: its own message, no traceback
        message = f"{_given_flag(argv, flag)}: {' '.join(str(cause).split())}"
      else:
        message = " ".join(str(err).split())
      sys.stderr.write(f"{name}: error: {message}\n")
      raise SystemExit(1) from None
    except SyntaxError as err:  # the config file does not compile (or is not UTF-8)
      sys.stderr.write(f"{name}: error: {config_file_error(err)}\n")
      raise SystemExit(1) from None
    except OSError as err:  # an override read the placeholder of a file that did not load
      if "config file" in str(err):
        message = config_load_error(argv, flag, err)
      else:
        message = f"{type(err).__name__}: {' '.join(str(err).split())}"
      sys.stderr.write(f"{name}: error: {message}\n")
      raise SystemExit(1) from None
    except (AttributeError, KeyError, TypeError) as err:  # TypeError: an override below a value
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
