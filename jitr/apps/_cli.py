"""What every jitr absl main shares: one skeleton, one error format, ``--workdir``, ``--config``.

* :class:`App` -- a console script written once (its name, required flags, inputs):
  :meth:`App.run` parses the flags, answers ``--help`` in plain text with the config fields
  as a tree, ends any fault of the command line with one ``NAME: error: ...`` line (exit
  status 1), then runs the app's ``main()``.
* :func:`run_reporting_bad_input` -- bad input exits 1 with one ``NAME: error: ...`` line,
  Ctrl-C exits :data:`INTERRUPTED_EXIT_STATUS` with one ``NAME: interrupted ...`` line
  (before the app runs too, and where Python would lose it: :mod:`jitr.apps.interrupts`).
* :func:`parse_flags` -- absl's parsing, every error one line: an unknown flag lists the
  app's flags, an override of a field the config does not have says "unknown field X"
  with the valid ones, a config file that does not compile gives ``FILE:LINE: ...``, one
  that does not load (also with overrides) ``--config=FILE: could not load ...``, and an
  argument its ``get_config`` refuses that function's own message.
* :func:`loaded_config` -- a ``--config`` flag's ConfigDict, or one line saying why
  the file did not load.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, NoReturn

from absl import app, flags, logging
from ml_collections import config_flags
from ml_collections.config_flags.config_flags import ConfigFileFlagParser as _ConfigFileParser

from jitr import paths, progress
from jitr.apps import _config_files, interrupts
from jitr.apps.interrupts import INTERRUPTED_EXIT_STATUS
from jitr.apps.native_stdout import native_output_to_stderr

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


def join_configured_job(settings: Any = None):
  """:func:`jitr.training.distributed.join_job` with a run config's ``distributed`` group
  (configs/default.py: unset values ``""`` / ``0`` / ``-1`` join the job JAX detects, or
  run a single process); ``None`` (an app without a run config): the job JAX detects."""
  from jitr.training import distributed  # JAX loads only when an app runs

  if settings is None:
    return distributed.join_job()
  return distributed.join_job(
    settings["coordinator_address"],
    settings["num_processes"],
    settings["process_id"],
    heartbeat_timeout_s=settings["heartbeat_timeout_s"],
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


class Input(NamedTuple):
  """A file or folder that the command line names: its ``path`` and the error line when it
  does not exist (``missing``: what was given and what was expected)."""

  path: str
  missing: str


def fail(name: str, message: str) -> NoReturn:
  """Ends the app ``name`` with one line ``NAME: error: MESSAGE`` on stderr, exit status 1."""
  sys.stderr.write(f"{name}: error: {message}\n")
  raise SystemExit(1)


@dataclasses.dataclass(frozen=True)
class App:
  """One jitr console script, written once: its ``name`` (in its error lines, its Ctrl-C
  line and its help), the ``module`` that defines its flags (``__name__``), the flags it
  ``requires``, the ``inputs`` its command line names (checked to exist before ``main``
  runs, e.g. :func:`flag_inputs`) and the line a Ctrl-C prints (after ``NAME: ``).

  :meth:`run` is the whole app: ``--help`` (plain text, the config fields listed), one-line
  errors for a bad or missing flag, a stray argument and a missing input, then ``main()``
  with bad input (``ValueError``/``OSError``) as one line (:func:`run_reporting_bad_input`).
  """

  name: str
  module: str
  requires: tuple[str, ...] = ()
  inputs: Callable[[], Iterable[Input]] | None = None
  interrupted: str = "interrupted (Ctrl-C)"

  def own_flags(self) -> list[str]:
    """The names of the flags that the app's module defines or holds (``--workdir``,
    ``--config``), in definition order."""
    module = sys.modules[self.module]
    names = [flag.name for flag in flags.FLAGS.get_key_flags_for_module(self.module)]
    names += [v.name for v in vars(module).values() if isinstance(v, flags.FlagHolder)]
    return [name for name in dict.fromkeys(names) if name in flags.FLAGS]

  def config_file_flags(self) -> list[str]:
    """The app's flags that take a config file (``--config=FILE[:ARG]``)."""
    return [n for n in self.own_flags() if _takes_config_file(flags.FLAGS[n])]

  def run(self, main: Callable[[], Any]) -> None:
    """Runs the app: parses ``sys.argv`` (a ``--config`` file named ``configs/NAME.py`` that
    is not there is the shipped one), answers ``--help`` with exit status 0, ends any fault
    of the command line with one ``NAME: error: ...`` line and exit status 1, checks the
    inputs, then calls ``main()``."""
    for name in self.own_flags():  # absl's --help lists the key flags of sys.argv[0] only
      flags.FLAGS.register_key_flag_for_module(sys.argv[0], flags.FLAGS[name])
    given = list(sys.argv)
    sys.argv = _config_files.resolve_config_arguments(
      given, self.config_file_flags(), _config_files.shipped_configs_dir()
    )  # ml_collections reads the overrides from sys.argv too
    args = sys.argv[1 : sys.argv.index("--") if "--" in sys.argv else len(sys.argv)]
    asked = [arg for arg in args if arg in _HELP_FLAGS]
    if asked:  # absl exits 1 after printing the help; asking for it is no error
      sys.stdout.write(help_text(self, sys.argv, short=_HELP_FLAGS[asked[0]]))
      raise SystemExit(0)
    run_reporting_bad_input(  # a Ctrl-C while a config file loads is one line too
      self.name,
      lambda: self._run_absl(main, given),
      interrupted=self.interrupted,
    )

  def _run_absl(self, main: Callable[[], Any], given: list[str]) -> None:
    """absl's ``app.run`` of ``main`` (flags parsed by :meth:`parse`), with a Ctrl-C from
    now on a ``KeyboardInterrupt`` that is never lost (:func:`interrupts.raise_on_ctrl_c`)
    and bad input one line (:func:`run_reporting_bad_input`)."""
    interrupts.raise_on_ctrl_c()
    app.run(
      lambda argv: run_reporting_bad_input(
        self.name, lambda: self._checked_main(main), interrupted=self.interrupted
      ),
      flags_parser=lambda argv: self.parse(argv, given),
    )

  def parse(self, argv: list[str], given: list[str] | None = None) -> list[str]:
    """``argv`` parsed into absl's flags (``given``: the command line as typed, for the
    messages); a missing required flag, a bad flag and a stray argument end the app with one
    line (:func:`fail`). Returns ``[argv[0]]``."""
    own = self.own_flags()
    names = given_flag_names(argv)
    unknown = unknown_flag_names(names, self.config_file_flags())
    if unknown:  # before a missing flag: it may be that flag misspelt
      fail(self.name, unknown_flag_error(unknown[0], own))
    self._check_required(names)  # before a config file is loaded
    rest = parse_flags(self.name, argv, given or argv, own)
    if len(rest) > 1:
      fail(self.name, f"unexpected argument {rest[1]!r} (flags take the form --name=value)")
    for name in self.config_file_flags():
      if name in names and flags.FLAGS[name].value is None:
        fail(
          self.name,
          f"{_given_flag(given or argv, name)}: get_config() returned None; "
          "expected it to return the config (a ConfigDict)",
        )
    self._check_required(None)
    return rest

  def _check_required(self, given: set[str] | None) -> None:
    """:func:`fail` naming the first required flag missing from ``given`` (names on the
    command line; None: the parsed flags, where an empty value is missing too)."""
    for name in self.requires:
      flag = flags.FLAGS[name]
      if given is None and flag.value not in (None, ""):
        continue
      if given is not None and (name in given or "flagfile" in given):
        continue
      choices = getattr(flag.parser, "enum_values", None)
      one_of = f" (one of: {', '.join(choices)})" if choices else ""
      fail(self.name, f"--{name} is required: {flag_meaning(flag)}{one_of}")

  def _checked_main(self, main: Callable[[], Any]) -> Any:
    """``main()``, after every input of :attr:`inputs` is found to exist (else a
    ``ValueError`` naming the first missing one and what was expected), with what native
    libraries write to stdout sent to stderr (:func:`native_output_to_stderr`)."""
    for item in self.inputs() if self.inputs is not None else ():
      if not paths.exists(item.path):
        raise ValueError(item.missing)
    native_output_to_stderr()
    return main()


def flag_inputs(*names: str) -> Callable[[], list[Input]]:
  """``App.inputs`` of the flags ``names``: each one given (not empty) must name an existing
  file or folder, else ``--NAME=VALUE: no such file or folder; expected`` its flag help."""

  def inputs() -> list[Input]:
    out = []
    for name in names:
      value = flags.FLAGS[name].value
      if value:
        expected = _lower_first(flag_meaning(flags.FLAGS[name]))
        out.append(Input(value, f"--{name}={value}: no such file or folder; expected {expected}"))
    return out

  return inputs


def flag_meaning(flag: flags.Flag) -> str:
  """``flag``'s help text without the ``<a|b>: `` that absl puts before an enum's."""
  return re.sub(r"^<[^>]*>: ", "", flag.help or "")


def _lower_first(text: str) -> str:
  """``text`` with its first letter lower-cased when it starts a plain word ("The x" ->
  "the x", "A y" -> "a y", "SGRAF" kept); a final period dropped."""
  text = text.rstrip().rstrip(".")
  word = text.split(" ", 1)[0]
  plain = word.isalpha() and word[:1].isupper() and (word[1:].islower() or len(word) == 1)
  return text[0].lower() + text[1:] if plain else text


def unknown_flag_names(names: Iterable[str], config_flags_: Sequence[str]) -> list[str]:
  """The names of ``names`` that are no flag (``noNAME`` of a boolean flag is one; so is
  ``CONFIG.FIELD``, an override of a config flag of ``config_flags_``), sorted."""
  fv = flags.FLAGS
  out = []
  for name in names:
    if name in fv or name in ("flagfile", "undefok"):
      continue
    if name.startswith("no") and name[2:] in fv and fv[name[2:]].boolean:
      continue
    if any(name.startswith(f"{flag}.") for flag in config_flags_):
      continue
    out.append(name)
  return sorted(out)


def given_flag_names(argv: Sequence[str]) -> set[str]:
  """The names of the flags ``argv`` gives a value (``--name=VALUE`` not empty, or ``--name``
  / ``-name`` followed by its value); ``--`` ends the flags."""
  out = set()
  for arg in argv[1:]:
    if arg == "--":
      break
    match = re.match(r"-{1,2}([\w.-]+)(=?)(.*)$", arg, flags=re.DOTALL)
    if match and (match.group(3) or not match.group(2)):
      out.add(match.group(1))
  return out


def _takes_config_file(flag: flags.Flag) -> bool:
  """Whether ``flag`` is an ml_collections config-file flag."""
  return isinstance(flag.parser, _ConfigFileParser)


def _config_dict_default(flag: flags.Flag) -> Any:
  """The default ConfigDict of an ml_collections config-dict flag, else None."""
  default = flag.default
  return default if hasattr(default, "to_dict") and not _takes_config_file(flag) else None


# Arguments asking for the help text: True for the app's own flags, False for all flags.
_HELP_FLAGS = {"--help": True, "-h": True, "-?": True, "--helpshort": True, "--helpfull": False}


def help_text(app_: App, argv: list[str], *, short: bool) -> str:
  """``--help`` (``short``: the app's own flags) or ``--helpfull``: the module's docstring
  as plain text, the required flags, absl's flag listing, then the config fields as a tree
  with their defaults (and meanings: :func:`jitr.apps._config_files.field_meanings`) and,
  for a config-file flag, the shipped config files."""
  module = sys.modules[app_.module]
  doc = _config_files.plain_text(module.__doc__ or f"{app_.name} [flags]").strip("\n")
  parts = [doc + "\n"]
  if app_.requires:
    parts.append("required: " + ", ".join(f"--{n}" for n in app_.requires) + "\n")
  own = [flags.FLAGS[n] for n in app_.own_flags()]
  hidden = [f for f in own if _takes_config_file(f) or _config_dict_default(f) is not None]
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
  default = _config_dict_default(flag)
  if default is not None:
    return [f"--{flag.name} fields (their defaults; {override}):", *_indented(default, {})]
  configs_dir = _config_files.shipped_configs_dir()
  shipped_default = os.path.join(configs_dir, "default.py")
  given = [a.split("=", 1)[1] for a in argv[1:] if a.startswith(f"--{flag.name}=")]
  lines, config = [], None
  if given:
    try:
      config = _ConfigFileParser(flag.name).parse(given[-1])
      config.get("seed")  # a file that did not load leaves a placeholder raising here
      source = given[-1]
    except Exception as err:  # the help still lists the default config's fields
      lines.append(f"({config_load_error(argv, flag.name, err)})")
      config = None
  if config is None:
    source = shipped_default
    try:
      config = _ConfigFileParser(flag.name).parse(shipped_default)
    except Exception as err:  # the help answers even where the config cannot load
      cause = (str(err).strip().splitlines() or [type(err).__name__])[-1]
      lines.append(f"(it did not load: {cause})")
      config = {}
  path = source.split(":", 1)[0]
  meanings = _config_files.file_meanings(shipped_default, path)
  lines.insert(0, f"--{flag.name} fields of {source} (their defaults; {override}):")
  lines += _indented(config, meanings)
  return [*lines, "", *_config_files.shipped_config_lines(configs_dir)]


def _indented(config: Any, meanings: dict[str, str]) -> list[str]:
  """:func:`jitr.apps._config_files.config_tree` of ``config``, indented two spaces."""
  return ["  " + line for line in _config_files.config_tree(config, meanings)]


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
  No such file or directory: 'FILE'``), and a file not found is told the shipped ones."""
  cause = [line.strip() for line in str(err).splitlines() if line.strip()]
  last = cause[-1] if cause else type(err).__name__
  if "No such file" in last:
    last += f"; expected a config file, e.g. one of the shipped {_shipped_names()}"
  return f"{_given_flag(argv, flag)}: could not load the config file: {last}"


def _shipped_names() -> str:
  """``configs/default.py, configs/paper.py:DATA,MODEL,LOSS, ...``: the shipped config files
  as ``--config`` takes them."""
  folder = _config_files.shipped_configs_dir()
  try:
    forms = [form for form, _ in _config_files.shipped_configs(folder)]
  except (OSError, SyntaxError, UnicodeDecodeError):
    return f"configs/*.py (in {folder})"
  return ", ".join(f"configs/{form}" for form in forms)


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


def unknown_flag_error(name: str, own: Sequence[str]) -> str:
  """``unknown flag --NAME (did you mean --Y?); expected one of --A, --B, ...`` for an app
  whose flags are ``own``."""
  close = difflib.get_close_matches(name, own, n=1)
  hint = f" (did you mean --{close[0]}?)" if close else ""
  listed = ", ".join(f"--{n}" for n in sorted(own))
  return (
    f"unknown flag --{name}{hint}; expected one of {listed} (--helpfull also lists absl's flags)"
  )


def parse_flags(name: str, argv: list[str], given: list[str], own: Sequence[str]) -> list[str]:
  """``flags.FLAGS(argv)``: the arguments left, ``[argv[0]]`` and stray ones. A flag error
  ends the app ``name`` with one line (:func:`fail`): an unknown flag lists the app's flags
  ``own``; an override of a field the config file does not define says "unknown field X"
  with the valid ones; so do a config file that does not compile or load
  (:func:`config_file_error`, :func:`config_load_error`) and a ``--config=FILE:ARG`` whose
  ``get_config(ARG)`` raises ``ValueError`` / ``TypeError``
  (``NAME: error: --config=FILE:ARG: MESSAGE``). ``given`` is the command line as typed,
  which the messages quote."""
  flag = "config"
  try:
    with _without_config_loader_warnings():
      return flags.FLAGS(argv)
  except flags.UnrecognizedFlagError as err:
    fail(name, unknown_flag_error(err.flagname, own))
  except flags.Error as err:  # absl's own: a value of the wrong type, a missing file
    cause = config_function_error(err)
    if cause is not None:  # get_config(ARG) refused ARG: its own message, no traceback
      fail(name, f"{_given_flag(given, flag)}: {' '.join(str(cause).split())}")
    fail(name, re.sub(r"^flag (--\S)", r"\1", " ".join(str(err).split())))
  except SyntaxError as err:  # the config file does not compile (or is not UTF-8)
    fail(name, config_file_error(err))
  except OSError as err:  # an override read the placeholder of a file that did not load
    if "config file" in str(err):
      fail(name, config_load_error(given, flag, err))
    fail(name, f"{type(err).__name__}: {' '.join(str(err).split())}")
  except (AttributeError, KeyError, TypeError) as err:  # TypeError: an override below a value
    if "is not allowed" in str(err):  # --config=X of an app whose config is built in
      fail(
        name,
        f"{_given_flag(given, flag)}: this app's --{flag} is built in; "
        f"--{flag}.FIELD=VALUE overrides one of its fields (--help lists them)",
      )
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
        fail(name, f"{arg}: {problem}")
    fail(name, f"{type(err).__name__}: {err}")
