"""What a training run stopped by a signal (after saving its latest checkpoint) exits
with: the status a scheduler understands and one line that says how to resume.

Used by jitr-train and by jitr-tables, which trains the runs of a table in its own
process."""

from __future__ import annotations

import signal

from jitr.apps.interrupts import INTERRUPTED_EXIT_STATUS

# Exit status of a run stopped by SIGTERM after saving its latest checkpoint: EX_TEMPFAIL
# (sysexits.h: "temporary failure, retry"), so a scheduler requeues it; a re-run resumes.
PREEMPTED_EXIT_STATUS = 75


def stopped_exit(stop_signal: int | None, step: int | None) -> tuple[int, str]:
  """``(exit status, line)`` of a run stopped by ``stop_signal`` after saving ``step``:
  :data:`INTERRUPTED_EXIT_STATUS` for SIGINT (Ctrl-C), :data:`PREEMPTED_EXIT_STATUS`
  otherwise (SIGTERM)."""
  at = f" at step {step}" if step is not None else ""
  if stop_signal == signal.SIGINT:
    status, what = INTERRUPTED_EXIT_STATUS, f"interrupted (Ctrl-C){at}"
  else:
    status, what = PREEMPTED_EXIT_STATUS, f"stopped by SIGTERM{at}"
  return status, f"{what}; the latest checkpoint is saved: run the same command to resume"
