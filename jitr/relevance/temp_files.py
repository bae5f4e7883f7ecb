"""Removal of the temporary files that dead writers left in a records directory.

Every file is written to ``NAME.tmp-HOST-PID-RANDOM`` (:func:`jitr.fileio.temp_name`) and
renamed when complete; a write that was interrupted leaves its temporary file behind.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from jitr import fileio, paths

_TMP_RE = re.compile(r"\.tmp-(?:(?P<host>[^-/]+)-)?(?P<pid>\d+)(?:-[0-9a-f]+)?$")
"""``HOST-PID-HEX`` after the marker; a host tag has no ``-``, so a HEX of decimal digits
(``12345678``) is never read as the process id of a host named ``HOST-PID``."""


def process_alive(pid: int) -> bool:
  """Whether a process ``pid`` runs on this host (one of another user's counts as alive)."""
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True


def remove_stale_tmp_files(out_dir: str, log: Callable[[str], None]) -> None:
  """Remove temporary files left by dead processes of this host, or by this process.

  Files of live processes, and of other hosts (whose processes cannot be
  checked), are left alone: they may be another worker's write in flight.
  """
  host = fileio.host_tag()
  for stale in paths.glob(out_dir, "*.tmp-*"):
    match = _TMP_RE.search(stale)
    if match is None or (match["host"] is not None and match["host"] != host):
      continue
    pid = int(match["pid"])
    if pid == os.getpid() or not process_alive(pid):
      log(f"removing unfinished file {os.path.basename(stale)}")
      try:
        paths.remove(stale)
      except FileNotFoundError:  # another worker removed it first
        pass
