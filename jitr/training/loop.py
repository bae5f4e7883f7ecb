"""The epoch loop: resume, step (batches prefetched to the devices), checkpoint every
epoch and on SIGTERM or SIGINT (Ctrl-C), validate."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import signal
import threading
from collections.abc import Callable, Iterable
from typing import Any

import jax

from jitr.training.checkpoints import Checkpoints
from jitr.training.finite import FiniteGuard
from jitr.training.parallel import DataParallel
from jitr.training.prefetch import prefetch_to_device
from jitr.training.state import TrainState
from jitr.training.train_progress import TrainProgress

EpochBatches = Callable[[int], Iterable[dict[str, Any]]]


class StopRequested:
  """Set by SIGTERM (preemption) or SIGINT (Ctrl-C) while installed; the loop saves the
  latest state and returns.

  :attr:`signal_number` is the first of those signals received (``None`` before). A
  SIGINT after a stop was requested (a second Ctrl-C, e.g. during the save) raises
  ``KeyboardInterrupt`` at once: the save in progress is abandoned, and as a step's
  manifest is written last, that step is never restored (the previous one is).
  """

  SIGNALS = (signal.SIGTERM, signal.SIGINT)

  def __init__(self) -> None:
    self._event = threading.Event()
    self._previous: dict[int, Any] = {}
    self.signal_number: int | None = None

  def __call__(self) -> bool:
    return self._event.is_set()

  def request(self, signum: int = signal.SIGTERM, frame: Any = None) -> None:
    """The signal handler: asks the loop to stop (records ``signum``); a SIGINT after a
    stop was already requested raises ``KeyboardInterrupt``."""
    del frame
    if signum == signal.SIGINT and self._event.is_set():
      raise KeyboardInterrupt
    if self.signal_number is None:
      self.signal_number = signum
    self._event.set()

  def __enter__(self) -> StopRequested:
    if threading.current_thread() is threading.main_thread():
      for signum in self.SIGNALS:
        self._previous[signum] = signal.signal(signum, self.request)
    return self

  def __exit__(self, *exc: Any) -> None:
    for signum, previous in self._previous.items():
      if previous is not None:  # None: a handler installed outside Python, left in place
        signal.signal(signum, previous)
    self._previous = {}


@dataclasses.dataclass(frozen=True)
class EpochPlan:
  """What :func:`fit` trains: ``num_epochs`` epochs of ``steps_per_epoch`` batches each,
  ``epoch_batches(epoch)`` giving an epoch's host batches.

  ``epoch_batches(epoch)`` must give the same host batches for the same epoch every time
  (seeded by the epoch), so a resumed run — restored from the latest checkpoint, skipping
  the batches the saved step already consumed — ends with exactly the parameters of an
  uninterrupted one.
  """

  epoch_batches: EpochBatches
  steps_per_epoch: int
  num_epochs: int
  eval_every_steps: int = 0
  """Validate (and keep the best checkpoint) also every this many steps within an epoch,
  as the official VSE++, VSRN and SGRAF code's ``val_step`` does; 0: after every epoch
  only."""

  @property
  def total_steps(self) -> int:
    return self.steps_per_epoch * self.num_epochs


@dataclasses.dataclass(frozen=True)
class LoopHooks:
  """What :func:`fit` calls besides the step; every one optional.

  Attributes:
    evaluate: ``evaluate(host_state) -> metrics`` after every epoch (also what the best
      checkpoint is chosen by); ``None``: no validation.
    on_step: ``on_step(step, metrics)`` after every step (``metrics`` still on the devices).
    on_epoch: ``on_epoch(epoch, validation_metrics)`` after every epoch.
    on_validation: ``on_validation(step, validation_metrics)`` after every validation:
      each epoch's and the ones within an epoch (:attr:`EpochPlan.eval_every_steps`).
    stop: ``stop() -> bool`` after every step; true saves the latest state and returns
      (see :class:`StopRequested`).
    progress: the :class:`~jitr.training.train_progress.TrainProgress` that says what the
      loop does (restoring, ``resumed from step N``, compiling the train step) and draws
      the steps line, whose rate leaves out validation and checkpoint saves; ``None``: a
      silent one.
  """

  evaluate: Callable[[TrainState], dict[str, float]] | None = None
  on_step: Callable[[int, dict[str, Any]], None] = lambda step, metrics: None
  on_epoch: Callable[[int, dict[str, float]], None] = lambda epoch, metrics: None
  on_validation: Callable[[int, dict[str, float]], None] = lambda step, metrics: None
  stop: Callable[[], bool] = lambda: False
  progress: TrainProgress | None = None


def fit(
  state: TrainState,
  *,
  parallel: DataParallel,
  plan: EpochPlan,
  checkpoints: Checkpoints | None = None,
  hooks: LoopHooks = LoopHooks(),
  prefetch: int = 2,
  check_finite_every: int = 100,
) -> tuple[TrainState, bool]:
  """Trains ``plan``'s epochs (:class:`EpochPlan`); returns ``(state, finished)``.

  Starts from the latest checkpoint of ``checkpoints`` when it has one, skipping the
  batches the saved step already consumed, and saves the latest state every epoch
  (and the best by ``hooks.evaluate``'s metrics). When ``hooks.stop()`` turns true
  (see :class:`StopRequested`), the latest state is saved and ``finished`` is
  ``False``. Host batches are built in a background thread and put on the
  devices ``prefetch`` batches ahead (:func:`~jitr.training.prefetch.prefetch_to_device`),
  so the next batch's transfer overlaps the current step; ``prefetch=0`` builds
  and puts each batch in the loop's own thread. A plan of no epochs (``num_epochs=0``)
  validates the initial state and saves it as the latest and best checkpoint of step 0:
  a pretrained model's zero-shot workdir.

  Every ``check_finite_every`` steps, and always before it evaluates or saves,
  the loop fetches the ``loss`` and ``grad_norm`` of the steps since the last
  check (one transfer, no sync per step) and raises
  :class:`~jitr.training.finite.NonFiniteTrainingError` on the first NaN/Inf:
  that state is never saved, so the last good checkpoint stays the latest.
  """
  progress = hooks.progress
  if progress is None:
    progress = TrainProgress(total_steps=plan.total_steps, enabled=False)
    hooks = dataclasses.replace(hooks, progress=progress)
  if checkpoints is not None:
    if checkpoints.latest.latest_step() is not None:
      progress.phase("restoring the latest checkpoint")
    restored = checkpoints.restore(state)
    if restored is not None:
      state = restored
      progress.resumed(int(jax.device_get(state.step)))
  step = int(jax.device_get(state.step))
  state = parallel.put_state(state)
  if step < plan.total_steps:
    progress.phase("compiling the train step")
  progress.start(step)

  def kept() -> str:
    last = checkpoints.latest.latest_step() if checkpoints is not None else None
    return (
      "no checkpoint was saved" if last is None else f"the latest checkpoint is still step {last}"
    )

  try:
    guard = FiniteGuard(every=check_finite_every, kept=kept)
    return _epochs(
      state,
      step,
      parallel=parallel,
      plan=plan,
      checkpoints=checkpoints,
      hooks=hooks,
      guard=guard,
      prefetch=prefetch,
    )
  finally:
    progress.close()


def _epochs(
  state: TrainState,
  step: int,
  *,
  parallel: DataParallel,
  plan: EpochPlan,
  checkpoints: Checkpoints | None,
  hooks: LoopHooks,
  guard: FiniteGuard,
  prefetch: int,
) -> tuple[TrainState, bool]:
  """:func:`fit`'s epochs from ``step`` on, ``state`` already on the devices and
  ``hooks.progress`` set."""
  progress = hooks.progress
  steps_per_epoch = plan.steps_per_epoch
  for epoch in range(step // steps_per_epoch, plan.num_epochs):
    skip = step - epoch * steps_per_epoch
    host_batches = itertools.islice(plan.epoch_batches(epoch), skip, steps_per_epoch)
    if prefetch > 0:
      device_batches = prefetch_to_device(host_batches, size=prefetch, put=parallel.put_batch)
    else:  # each batch built and put in the loop's thread (JAX's async dispatch still overlaps)
      device_batches = (parallel.put_batch(b) for b in host_batches)
    with contextlib.closing(device_batches):
      for batch in device_batches:
        state, metrics = parallel(state, batch)
        step += 1
        progress.on_step(step, metrics)
        hooks.on_step(step, metrics)
        guard.add(step, metrics)
        if hooks.stop():
          guard.check()
          if checkpoints is not None:
            with progress.paused():
              checkpoints.save_latest(parallel.get_state(state))
          return parallel.get_state(state), False
        if _validates_within(step, plan) and hooks.evaluate is not None:
          with progress.paused():
            guard.check()
            host_state = parallel.get_state(state)
            _keep_best(host_state, step, hooks.evaluate(host_state), checkpoints, hooks)
    if step != (epoch + 1) * steps_per_epoch:
      raise ValueError(
        f"epoch_batches({epoch}) gave {step - epoch * steps_per_epoch} batches; "
        f"expected steps_per_epoch = {steps_per_epoch}"
      )
    with progress.paused():
      guard.check()
      host_state = parallel.get_state(state)
      epoch_metrics = hooks.evaluate(host_state) if hooks.evaluate is not None else {}
      if checkpoints is not None:
        checkpoints.save_latest(host_state)
      if hooks.evaluate is not None:
        _keep_best(host_state, step, epoch_metrics, checkpoints, hooks)
      hooks.on_epoch(epoch, epoch_metrics)
  if plan.num_epochs == 0 and step == 0:
    _keep_initial(parallel.get_state(state), checkpoints, hooks)
  return parallel.get_state(state), True


def _keep_initial(
  host_state: TrainState, checkpoints: Checkpoints | None, hooks: LoopHooks
) -> None:
  """A plan of no epochs: the initial state (a pretrained model's, zero-shot) validated and
  saved as the latest and the best checkpoint of step 0."""
  with hooks.progress.paused():
    metrics = hooks.evaluate(host_state) if hooks.evaluate is not None else {}
    if checkpoints is not None:
      checkpoints.save_latest(host_state)
    if hooks.evaluate is not None:
      _keep_best(host_state, 0, metrics, checkpoints, hooks)


def _validates_within(step: int, plan: EpochPlan) -> bool:
  """Whether ``step`` is a validation within an epoch: a multiple of
  ``plan.eval_every_steps`` that is not an epoch's last step (validated anyway)."""
  every = plan.eval_every_steps
  return every > 0 and step % every == 0 and step % plan.steps_per_epoch != 0


def _keep_best(
  host_state: TrainState,
  step: int,
  metrics: dict[str, float],
  checkpoints: Checkpoints | None,
  hooks: LoopHooks,
) -> None:
  """A validation's ``metrics`` of ``host_state``: kept as the best checkpoint when they
  beat the earlier best, then ``hooks.on_validation(step, metrics)``."""
  if checkpoints is not None:
    checkpoints.save_best(host_state, metrics)
  hooks.on_validation(step, metrics)
