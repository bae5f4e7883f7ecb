"""The flag names of a command line (:func:`given_flag_names`), those that are no flag
(:func:`unknown_flag_names`) and the error line of one (:func:`unknown_flag_error`)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

from absl import flags


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


def unknown_flag_error(name: str, own: Sequence[str]) -> str:
  """``unknown flag --NAME (did you mean --Y?); expected one of --A, --B, ...`` for an app
  whose flags are ``own``."""
  close = difflib.get_close_matches(name, own, n=1)
  hint = f" (did you mean --{close[0]}?)" if close else ""
  listed = ", ".join(f"--{n}" for n in sorted(own))
  return (
    f"unknown flag --{name}{hint}; expected one of {listed} (--helpfull also lists absl's flags)"
  )
