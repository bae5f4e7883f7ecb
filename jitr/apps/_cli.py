"""What every jitr absl main shares: one skeleton (:class:`App`) and the pieces an app
imports from here:

* :class:`App` -- a console script written once (its name, required flags, inputs):
  :meth:`App.run` parses the flags, answers ``--help`` in plain text with the config fields
  as a tree (:mod:`jitr.apps._help`), ends any fault of the command line with one
  ``NAME: error: ...`` line (exit status 1; :mod:`jitr.apps._parse`), then runs the app's
  ``main()`` with bad input and Ctrl-C as one line (:mod:`jitr.apps._one_line`, and
  :mod:`jitr.apps.interrupts` where Python would lose a Ctrl-C).
* :func:`flag_inputs`, :class:`Input` -- the files the command line names, checked to exist.
* :func:`workdir_flag`, :func:`config_dict_flag`, :func:`loaded_config` -- shared flags.
* :func:`join_configured_job`, :func:`ending_on_a_lost_process` -- the job an app runs in.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable
from typing import Any

from absl import app, flags, logging

from jitr import paths, progress
from jitr.apps import interrupts
from jitr.apps._flags import config_dict_flag, loaded_config, takes_config_file, workdir_flag
from jitr.apps._help import HELP_FLAGS, help_text
from jitr.apps._inputs import Input, flag_inputs
from jitr.apps._job import ending_on_a_lost_process, join_configured_job
from jitr.apps._one_line import run_reporting_bad_input
from jitr.apps._parse import parse_command_line
from jitr.apps.native_stdout import native_output_to_stderr
from jitr.papers.config_files import resolve_config_arguments, shipped_configs_dir

__all__ = [
  "App",
  "Input",
  "config_dict_flag",
  "ending_on_a_lost_process",
  "flag_inputs",
  "join_configured_job",
  "loaded_config",
  "run_reporting_bad_input",
  "workdir_flag",
]

# A line logged through a progress line's wrap_log (jitr.progress) names the function that
# logged it, not jitr/progress.py.
logging.ABSLLogger.register_frame_to_skip(progress.__file__, "log_around_line")


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
    return [n for n in self.own_flags() if takes_config_file(flags.FLAGS[n])]

  def run(self, main: Callable[[], Any]) -> None:
    """Runs the app: parses ``sys.argv`` (a ``--config`` file named ``configs/NAME.py`` that
    is not there is the shipped one), answers ``--help`` with exit status 0, ends any fault
    of the command line with one ``NAME: error: ...`` line and exit status 1, checks the
    inputs, then calls ``main()``."""
    for name in self.own_flags():  # absl's --help lists the key flags of sys.argv[0] only
      flags.FLAGS.register_key_flag_for_module(sys.argv[0], flags.FLAGS[name])
    given = list(sys.argv)
    sys.argv = resolve_config_arguments(
      given, self.config_file_flags(), shipped_configs_dir()
    )  # ml_collections reads the overrides from sys.argv too
    args = sys.argv[1 : sys.argv.index("--") if "--" in sys.argv else len(sys.argv)]
    asked = [arg for arg in args if arg in HELP_FLAGS]
    if asked:  # absl exits 1 after printing the help; asking for it is no error
      sys.stdout.write(help_text(self, sys.argv, short=HELP_FLAGS[asked[0]]))
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
    line (:func:`jitr.apps._parse.parse_command_line`). Returns ``[argv[0]]``."""
    return parse_command_line(
      self.name, argv, given or argv, self.own_flags(), self.config_file_flags(), self.requires
    )

  def _checked_main(self, main: Callable[[], Any]) -> Any:
    """``main()``, after every input of :attr:`inputs` is found to exist (else a
    ``ValueError`` naming the first missing one and what was expected), with what native
    libraries write to stdout sent to stderr (:func:`native_output_to_stderr`)."""
    for item in self.inputs() if self.inputs is not None else ():
      if not paths.exists(item.path):
        raise ValueError(item.missing)
    native_output_to_stderr()
    return main()
