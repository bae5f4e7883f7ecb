"""An app's stdout holds its own output alone: what native libraries write to file descriptor
1 goes to stderr.

stdout is what a user pipes into a file or another program (a results table, a summary),
but C++ libraries write to file descriptor 1 directly, past Python: Gloo, JAX's CPU
collectives of a multi-process job, prints ``[Gloo] Rank N is connected to M peer ranks``
once per device. :func:`native_output_to_stderr` points descriptor 1 at stderr's file and
gives Python's ``sys.stdout`` a descriptor of its own on the original stdout.
"""

from __future__ import annotations

import os
import sys

_MOVED = False


def native_output_to_stderr() -> bool:
  """Makes file descriptor 1 a duplicate of 2 (stderr) and ``sys.stdout`` a text stream on
  a new duplicate of the original stdout (line-buffered on a terminal, as Python's own),
  once per process; returns whether it moved them now. Where ``sys.stdout`` is not the
  process's descriptor 1 (a test's capture, an embedding), nothing changes."""
  global _MOVED
  if _MOVED:
    return False
  try:
    own = sys.stdout.fileno() == 1 and sys.stderr.fileno() == 2
  except (AttributeError, OSError, ValueError):  # a stream without a descriptor
    own = False
  if not own:
    return False
  sys.stdout.flush()
  saved = os.dup(1)
  os.dup2(2, 1)
  sys.stdout = os.fdopen(
    saved,
    "w",
    buffering=1 if os.isatty(saved) else -1,
    encoding=sys.stdout.encoding,
    errors=sys.stdout.errors,
  )
  _MOVED = True
  return True
