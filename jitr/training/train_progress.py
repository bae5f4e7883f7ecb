"""What a training run says on stderr while it runs: one short line per phase (restoring
a checkpoint, compiling the train step), ``resumed from step N``, and the steps line of
:class:`jitr.progress.Progress`::

    train: 400/1560 steps (25%), 5.2 steps/s, ETA 3m43s

The rate counts training-step time only: the time spent in validation, checkpointing and
evaluation (:meth:`TrainProgress.paused`) and in JAX's compilations on the loop's thread
(:class:`CompileSeconds`) is left out, and so are the steps a resumed run restored. The
ETA so stays the time the remaining steps take, after a validation or a resume as before.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import IO, Any

import jax

from jitr import progress

# JAX's duration events of one compilation: tracing, lowering to MLIR, and the backend's
# compile (or its read from the persistent compilation cache).
COMPILE_EVENTS = frozenset(
  {
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
  }
)


class CompileSeconds:
  """Seconds JAX spent compiling on the thread that created it, while installed (a
  ``with`` block): a listener of :data:`COMPILE_EVENTS` through ``jax.monitoring``.
  :meth:`take` returns the seconds since its last call."""

  def __init__(self) -> None:
    self._thread = threading.get_ident()
    self._seconds = 0.0

  def record(self, event: str, duration_s: float, **kwargs: Any) -> None:
    """The listener: adds ``duration_s`` of a compile event on the creating thread."""
    del kwargs
    if event in COMPILE_EVENTS and threading.get_ident() == self._thread:
      self._seconds += float(duration_s)

  def take(self) -> float:
    """The compile seconds recorded since the last call."""
    seconds, self._seconds = self._seconds, 0.0
    return seconds

  def __enter__(self) -> CompileSeconds:
    jax.monitoring.register_event_duration_secs_listener(self.record)
    return self

  def __exit__(self, *exc: object) -> None:
    jax.monitoring.unregister_event_duration_listener(self.record)


class TrainProgress:
  """The lines of a training run on ``stream`` (stderr), on the first process only.

  :meth:`phase` says what the run does now (with ``phases``; None: when ``stream`` is a
  terminal); :meth:`resumed` that it restored step N (always);
  :meth:`start` opens the steps line, :meth:`on_step` counts each step (the first one
  waits for its result, so the first rate is a step's real time), :meth:`paused` leaves
  a block out of the rate, :meth:`close` ends the line. With ``enabled=False`` it writes
  nothing.
  """

  def __init__(
    self,
    *,
    total_steps: int,
    enabled: bool = True,
    stream: IO[str] | None = None,
    redraw: bool | None = None,
    phases: bool | None = None,
  ) -> None:
    self.total_steps = int(total_steps)
    self.phases = progress.on_terminal(stream) if phases is None else bool(phases)
    self.enabled = bool(enabled) and jax.process_index() == 0
    self.stream, self.redraw = stream, redraw
    self.line: progress.Progress | None = None
    self._compiles = contextlib.ExitStack()
    self._compile_seconds: CompileSeconds | None = None
    self._first = True

  def working_seconds(self) -> float:
    """Seconds of training-step time since :meth:`start` (validation, checkpoints and
    compiles left out; the compiles of the steps counted so far): a clock for other
    rates (0 before the start)."""
    if self.line is None:
      return 0.0
    return self.line.working_seconds(self.line.clock())

  def phase(self, text: str) -> None:
    """One line saying what the run does now (e.g. ``compiling the train step``)."""
    progress.say(text, enabled=self.enabled and self.phases, stream=self.stream)

  def resumed(self, step: int) -> None:
    """Says ``resumed from step STEP``."""
    progress.say(f"resumed from step {int(step)}", enabled=self.enabled, stream=self.stream)

  def start(self, step: int) -> None:
    """Opens the steps line at ``step`` (the restored step; not counted in the rate) and
    starts leaving compile time out of it."""
    self.line = progress.Progress(
      self.total_steps,
      "steps",
      label="train",
      enabled=self.enabled,
      initial=int(step),
      display=progress.Display(stream=self.stream, redraw=self.redraw),
    )
    self._compile_seconds = self._compiles.enter_context(CompileSeconds())

  def on_step(self, step: int, metrics: Any) -> None:
    """Counts step ``step`` done (its ``metrics``: the first step's are waited for)."""
    if self.line is None:
      return
    if self._first:  # the first step's time is its compile and its run, not its dispatch
      jax.block_until_ready(metrics)
      self._first = False
    if self._compile_seconds is not None:
      self.line.exclude(self._compile_seconds.take())
    self.line.update(step)

  @contextlib.contextmanager
  def paused(self) -> Iterator[None]:
    """Leaves the block's time out of the rate (validation, checkpoints, evaluation)."""
    if self.line is None:
      yield
      return
    with self.line.paused():
      yield
    if self._compile_seconds is not None:
      self._compile_seconds.take()  # compiled inside the block: already left out

  def close(self) -> None:
    """Ends the steps line (its final text) and stops counting compile time."""
    self._compiles.close()
    if self.line is not None:
      self.line.close()
      self.line = None
