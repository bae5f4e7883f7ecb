"""What every jitr absl main shares."""

from __future__ import annotations

from collections.abc import Callable


def run_reporting_bad_input(name: str, body: Callable[[], None]) -> None:
  """Runs ``body``; bad input (``ValueError``/``OSError``) exits 1 with one line.

  The line reads ``NAME: error: ...``.
  """
  try:
    body()
  except (ValueError, OSError) as err:
    raise SystemExit(f"{name}: error: {err}") from err


def workdir_flag(help_text: str):
  """The ``--workdir`` flag, defined once even when several apps are imported together (tests)."""
  from absl import flags

  if "workdir" in flags.FLAGS:
    return flags.FlagHolder(flags.FLAGS, flags.FLAGS["workdir"])
  return flags.DEFINE_string("workdir", None, help_text)
