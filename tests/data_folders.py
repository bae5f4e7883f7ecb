"""Where the tests find the real files a user brings: one environment variable per folder,
with the folder of that name under ``shared/data`` beside the repository as the fallback
(WordNet: Debian's ``/usr/share/wordnet``).

A missing folder fails the tests that need it, with one line naming the variable, so a run
that lost its data never passes by skipping them; ``JITR_TESTS_SKIP_MISSING_DATA=1`` skips
them instead (a checkout without the data).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SKIP_VARIABLE = "JITR_TESTS_SKIP_MISSING_DATA"


def data_folder(
  variable: str, name: str, marker: str, what: str, fallback: Path | None = None
) -> Path:
  """``$VARIABLE``, else ``fallback`` when given, else ``<repository>/../shared/data/NAME``;
  fails (or skips, with :data:`SKIP_VARIABLE` set to 1) the calling test when ``marker`` is
  not inside it."""
  default = fallback if fallback is not None else REPO.parent / "shared" / "data" / name
  path = Path(os.environ.get(variable) or default)
  if not (path / marker).exists():
    message = f"{what} not found at {path} (no {marker}): set {variable} to its folder"
    if os.environ.get(SKIP_VARIABLE) == "1":
      pytest.skip(message)
    pytest.fail(f"{message}, or {SKIP_VARIABLE}=1 to skip the tests that need it", pytrace=False)
  return path


def wordnet_folder() -> Path:
  """WordNet 3.0's files (``index.noun``, ``noun.exc``, ...): ``$JITR_WORDNET``, else
  Debian's ``wordnet-base`` folder ``/usr/share/wordnet`` (``.ci/run`` installs it)."""
  return data_folder(
    "JITR_WORDNET", "wordnet", "index.noun", "WordNet 3.0", fallback=Path("/usr/share/wordnet")
  )
