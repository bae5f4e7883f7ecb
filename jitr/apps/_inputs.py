"""The files and folders an app's command line names, checked to exist before its main
runs: each an :class:`Input`, a missing one an error line that says what was expected."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from absl import flags


class Input(NamedTuple):
  """A file or folder that the command line names: its ``path`` and the error line when it
  does not exist (``missing``: what was given and what was expected)."""

  path: str
  missing: str


def flag_inputs(*names: str) -> Callable[[], list[Input]]:
  """``App.inputs`` of the flags ``names``: each one given (not empty) must name an existing
  file or folder, else ``--NAME=VALUE: no such file or folder; expected`` its flag help."""

  def inputs() -> list[Input]:
    out = []
    for name in names:
      value = flags.FLAGS[name].value
      if value:
        expected = lower_first(flag_meaning(flags.FLAGS[name]))
        out.append(Input(value, f"--{name}={value}: no such file or folder; expected {expected}"))
    return out

  return inputs


def flag_meaning(flag: flags.Flag) -> str:
  """``flag``'s help text without the ``<a|b>: `` that absl puts before an enum's."""
  return re.sub(r"^<[^>]*>: ", "", flag.help or "")


def lower_first(text: str) -> str:
  """``text`` with its first letter lower-cased when it starts a plain word ("The x" ->
  "the x", "A y" -> "a y", "SGRAF" kept); a final period dropped."""
  text = text.rstrip().rstrip(".")
  word = text.split(" ", 1)[0]
  plain = word.isalpha() and word[:1].isupper() and (word[1:].islower() or len(word) == 1)
  return text[0].lower() + text[1:] if plain else text
