"""Stops a run whose training metrics stop being finite, without a host sync per step.

:class:`FiniteGuard` keeps the (still on-device) ``loss`` and ``grad_norm`` of the
steps since its last check; :meth:`FiniteGuard.check` fetches them in one
transfer and raises :class:`NonFiniteTrainingError` naming the first step and
value that is NaN or ±Inf. The loop checks every few steps and always before it
saves or evaluates, so a non-finite state is never checkpointed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

WATCHED = ("loss", "grad_norm")


class NonFiniteTrainingError(ValueError):
  """A training step produced a NaN or infinite loss or gradient norm."""


class FiniteGuard:
  """``guard.add(step, metrics)`` after every step; ``guard.check()`` raises on non-finite."""

  def __init__(
    self,
    *,
    every: int = 1,
    kept: Callable[[], str] = lambda: "",
    watched: tuple[str, ...] = WATCHED,
  ):
    """``kept()`` says what is still saved (e.g. "the latest checkpoint is still step 3");
    it ends the error message."""
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
      raise ValueError(f"FiniteGuard every={every!r}: expected a whole number of steps >= 1")
    self.every, self.kept, self.watched = every, kept, watched
    self._pending: list[tuple[int, dict[str, Any]]] = []

  def add(self, step: int, metrics: Mapping[str, Any]) -> None:
    """Records the step's watched metrics (device arrays; nothing is fetched) and checks
    every ``every`` steps."""
    self._pending.append((step, {k: metrics[k] for k in self.watched if k in metrics}))
    if step % self.every == 0:
      self.check()

  def check(self) -> None:
    """Fetches the pending metrics; raises on the first non-finite one."""
    pending, self._pending = self._pending, []
    if not pending:
      return
    for step, fetched in jax.device_get(pending):
      values = {k: np.asarray(fetched[k]) for k in self.watched if k in fetched}
      for name, value in values.items():
        if not np.all(np.isfinite(value)):
          raise NonFiniteTrainingError(
            f"step {step}: {name} is {value.item() if value.size == 1 else value} "
            f"({', '.join(f'{k}={v.item():.6g}' for k, v in values.items())}); "
            "training stopped without saving this state"
            + (f"; {self.kept()}" if self.kept() else "")
            + ". Lower optimizer.learning_rate or look for NaN/Inf in the data"
          )
