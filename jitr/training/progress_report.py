"""Training progress every few steps, as ``clu.periodic_actions.ReportProgress`` gave it:
steps/s since the last report (the time of timed sections left out, so a validation does
not make the next rate fall), the share of the run done, the ETA and the share of the
time so far spent in timed sections (:meth:`ProgressReport.timed`, e.g. validation)::

    12.5 steps/s, 40.0% (400/1000), ETA 48s (1m05s : 12.3% eval)

:class:`ProgressReport` logs that line (absl INFO) and writes ``steps_per_sec`` and
``uptime`` (seconds since it was created) to its writer at every reported step.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from absl import logging

from jitr.progress import format_duration


def should_report(step: int, previous_step: int, every_steps: int, total_steps: int) -> bool:
  """Whether ``step`` gets a report: a multiple of ``every_steps`` or the last step, and
  not the step of the previous report (or of the first call, which only starts the clock)."""
  return step != previous_step and (step % every_steps == 0 or step == total_steps)


def progress_message(
  step: int,
  total_steps: int,
  steps_per_sec: float,
  elapsed_s: float,
  time_per_part: Mapping[str, float],
) -> str:
  """The progress line: ``steps_per_sec``, ``step`` of ``total_steps`` (when positive)
  and the ETA at that rate, then each timed section's share of ``elapsed_s`` (by name)."""
  message = f"{steps_per_sec:.1f} steps/s"
  if total_steps > 0:
    eta = (total_steps - step) / steps_per_sec if steps_per_sec > 0 else float("inf")
    eta_text = format_duration(eta) if eta != float("inf") else "unknown"
    message += f", {100 * step / total_steps:.1f}% ({step}/{total_steps}), ETA {eta_text}"
  if time_per_part and elapsed_s > 0:
    shares = ", ".join(
      f"{100 * dt / elapsed_s:.1f}% {name}" for name, dt in sorted(time_per_part.items())
    )
    message += f" ({format_duration(elapsed_s)} : {shares})"
  return message


class ProgressReport:
  """Call it after every training step with the step number; at each step that
  :func:`should_report` picks it logs :func:`progress_message` and writes
  ``steps_per_sec`` and ``uptime`` to ``writer`` (any object with ``write_scalars``).
  The first call only starts the clock. The rate is the steps since the last report over
  the time between them less the timed sections', or over the difference of
  ``work_clock()`` (seconds of training-step time) when given."""

  def __init__(
    self,
    *,
    total_steps: int,
    every_steps: int,
    writer: Any = None,
    work_clock: Callable[[], float] | None = None,
  ):
    self.total_steps, self.every_steps, self.writer = total_steps, every_steps, writer
    # seconds of training-step time so far (validation, checkpoints and compiles left out);
    # None: wall time less the timed sections
    self.work_clock = work_clock
    self.time_per_part: defaultdict[str, float] = defaultdict(float)
    self._t0 = time.monotonic()
    # (step, time, seconds in timed sections) at the last report
    self._previous: tuple[int, float, float] | None = None

  def __call__(self, step: int, now: float | None = None) -> bool:
    """Reports ``step`` if it is due (``now``: a ``time.monotonic()`` reading); whether it was."""
    now = wall = time.monotonic() if now is None else now
    if self.work_clock is not None:  # its time is the steps' own: nothing more to leave out
      now, timed = self.work_clock(), 0.0
    else:
      timed = sum(self.time_per_part.values())
    if self._previous is None:
      self._previous = (step, now, timed)
      return False
    previous_step, previous_time, previous_timed = self._previous
    if not should_report(step, previous_step, self.every_steps, self.total_steps):
      return False
    stepping = now - previous_time - (timed - previous_timed)  # timed sections left out
    steps_per_sec = (step - previous_step) / max(stepping, 1e-9)
    elapsed = wall - self._t0
    logging.info(
      "%s", progress_message(step, self.total_steps, steps_per_sec, elapsed, self.time_per_part)
    )
    if self.writer is not None:
      self.writer.write_scalars(step, {"steps_per_sec": steps_per_sec, "uptime": elapsed})
    self._previous = (step, now, timed)
    return True

  @contextlib.contextmanager
  def timed(self, name: str) -> Iterator[None]:
    """Adds the block's wall time to section ``name`` (also when it raises)."""
    start = time.monotonic()
    try:
      yield
    finally:
      self.time_per_part[name] += time.monotonic() - start
