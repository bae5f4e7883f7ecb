"""One stop decision for every process of a job, whichever process got the signal.

A preemption's SIGTERM (or a Ctrl-C) reaches the processes of a multi-host job at
different steps, or reaches only one of them. Each process's own
:class:`~jitr.training.loop.StopRequested` is local; if each acted on it alone, one
would enter the checkpoint save (a collective) while the others train on, and the job
would hang. :class:`AgreedStop` asks every ``every_steps``-th call: the processes
gather their local signal numbers (one small all-gather, the same call on every
process) and all of them stop at that step if any one was signalled.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import jax
import numpy as np
from jax.experimental import multihost_utils

from jitr.training.loop import StopRequested


def agreed_signal(signals: np.ndarray) -> int | None:
  """The signal the job stops with, given every process's (0: none): SIGTERM if any
  process got one (a preemption: the job is requeued), else the largest other, ``None``
  when no process was signalled."""
  received = {int(s) for s in np.asarray(signals).ravel() if s}
  if not received:
    return None
  return int(signal.SIGTERM) if signal.SIGTERM in received else max(received)


class AgreedStop:
  """A ``stop()`` for :func:`~jitr.training.loop.fit` (its ``hooks.stop``) that is true on
  every process at the same step.

  With one process it is ``local`` itself (checked every step). With several, every
  ``every_steps``-th call all-gathers each process's :attr:`StopRequested.signal_number`;
  the loop calls ``stop()`` once per step on every process, so those calls meet. A signal
  takes effect at most ``every_steps`` steps after it arrives, on every process together.

  Args:
    local: this process's signal handler state.
    every_steps: calls between two all-gathers (multi-process only).
    gather: ``[P]`` array of every process's value from this process's (defaults to
      ``multihost_utils.process_allgather``).
    process_count: processes in the job (defaults to ``jax.process_count()``).
  """

  def __init__(
    self,
    local: StopRequested,
    every_steps: int,
    *,
    gather: Callable[[np.ndarray], np.ndarray] = multihost_utils.process_allgather,
    process_count: int | None = None,
  ) -> None:
    if isinstance(every_steps, bool) or not isinstance(every_steps, int) or every_steps < 1:
      raise ValueError(f"every_steps: expected a positive int, got {every_steps!r}")
    self._local, self.every_steps, self._gather = local, every_steps, gather
    self._many = (jax.process_count() if process_count is None else process_count) > 1
    self._calls = 0
    self._agreed: int | None = None

  def __call__(self) -> bool:
    if not self._many:
      return self._local()
    self._calls += 1
    if self._agreed is None and self._calls % self.every_steps == 0:
      self._agreed = agreed_signal(self._gather(np.int32(self._local.signal_number or 0)))
    return self._agreed is not None

  @property
  def signal_number(self) -> int | None:
    """The signal the job stopped for (``None`` while it runs on)."""
    return self._local.signal_number if not self._many else self._agreed
