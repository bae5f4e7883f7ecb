"""Thin absl mains: flag parsing plus one library call each. Nothing imports this package.

The apps need the ``train`` extra, but ``pip install "jitr[torch]"`` installs their console
scripts (``jitr-train``, ``jitr-eval``, …) without it. Every console script imports this
package first, so it checks, without importing them, that the extra's modules are there:
if some are missing, a console script stops with one ``NAME: error: ...`` line naming
them (exit status 1), and any other importer gets a :class:`ModuleNotFoundError` with the
same message.

A console script stopped by Ctrl-C while it starts (Python importing the app) prints one
line and exits 130 (:mod:`jitr.apps.interrupts`), as it does once the app runs.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Sequence

from jitr.apps.interrupts import exit_on_ctrl_c_while_starting

# The top-level modules of the `train` extra's packages, in the order they are checked
# (`orbax` for orbax-checkpoint: finding `orbax.checkpoint` would import `orbax`).
TRAIN_MODULES = (
  "absl",
  "ml_collections",
  "flax",
  "optax",
  "orbax",
  "tensorflow",
  "tensorflow_datasets",
  "scipy",
  "sklearn",
  "tensorboard",
  "matplotlib",
)


def _findable(name: str) -> bool:
  """Whether the top-level module ``name`` can be imported, found without importing it."""
  try:
    return importlib.util.find_spec(name) is not None
  except ValueError:  # imported already, without a spec
    return True
  except ImportError:  # a finder refused it
    return False


def missing_train_modules(modules: Sequence[str] = TRAIN_MODULES) -> list[str]:
  """The modules of ``modules`` (the train extra's by default) that cannot be imported,
  in their order."""
  return [name for name in modules if not _findable(name)]


def missing_extra_message(missing: Sequence[str]) -> str:
  """The one-line error for the train extra's missing modules ``missing``."""
  return (
    f"jitr's apps need the train extra, which is not installed (missing: {', '.join(missing)}); "
    "install it with: pip install 'jitr[train]'"
  )


def console_script_name(argv0: str) -> str | None:
  """The jitr console script that ``argv0`` runs (``/venv/bin/jitr-train`` ->
  ``jitr-train``; Windows launchers' ``.exe`` and ``-script.py`` endings dropped), else None."""
  name = re.sub(r"(-script\.pyw?|\.exe)$", "", os.path.basename(argv0))
  return name if name.startswith("jitr-") else None


def answer_ctrl_c_while_starting() -> None:
  """In a jitr console script, a Ctrl-C from now until the app runs is one line and exit
  status 130 (:func:`jitr.apps.interrupts.exit_on_ctrl_c_while_starting`); elsewhere
  (a program importing jitr.apps) nothing changes."""
  script = console_script_name((getattr(sys, "argv", None) or [""])[0])
  if script is not None:
    exit_on_ctrl_c_while_starting(script)


def check_train_extra() -> None:
  """Nothing if the train extra's modules are all there; else ``SystemExit`` with one
  ``NAME: error: ...`` line for a jitr console script, ``ModuleNotFoundError`` otherwise."""
  missing = missing_train_modules()
  if not missing:
    return
  message = missing_extra_message(missing)
  script = console_script_name((getattr(sys, "argv", None) or [""])[0])
  if script is not None:
    raise SystemExit(f"{script}: error: {message}")
  raise ModuleNotFoundError(message, name=missing[0])


answer_ctrl_c_while_starting()
check_train_extra()
