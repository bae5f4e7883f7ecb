"""Optax optimizers of the papers: Adam / AdamW, step decay, global-norm clipping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import optax


def make_schedule(
  *,
  learning_rate: float,
  steps_per_epoch: int,
  decay_epochs: tuple[int, ...] = (),
  decay_factor: float = 0.1,
) -> optax.Schedule:
  """Step decay: ``lr · factor^{#(e ∈ decay_epochs, e ≤ epoch)}`` (VSE++: ×0.1 at 15)."""
  if steps_per_epoch <= 0:
    raise ValueError(f"steps_per_epoch: expected a positive integer, got {steps_per_epoch}")
  boundaries = {int(e) * steps_per_epoch: decay_factor for e in decay_epochs}
  return optax.piecewise_constant_schedule(learning_rate, boundaries)


def make_optimizer(
  config: Mapping[str, Any], *, steps_per_epoch: int
) -> optax.GradientTransformation:
  """``clip_by_global_norm(grad_clip)`` then Adam or AdamW on the step-decay schedule.

  ``config`` keys: ``name`` ('adam' | 'adamw'), ``learning_rate``,
  ``weight_decay`` (AdamW), ``grad_clip`` (≤ 0 disables), ``decay_epochs``,
  ``decay_factor``.

  One update per parameter per step, for every network. The official VSRN Adam lists the
  captioning encoder / decoder parameters twice (two Adam steps per iteration for them,
  and their gradients counted twice by ``clip_grad_norm``); jitr does not reproduce that
  (see :mod:`jitr.models.vsrn`).
  """
  name = config.get("name", "adam")
  schedule = make_schedule(
    learning_rate=float(config["learning_rate"]),
    steps_per_epoch=steps_per_epoch,
    decay_epochs=tuple(config.get("decay_epochs", ())),
    decay_factor=float(config.get("decay_factor", 0.1)),
  )
  if name == "adam":
    opt = optax.adam(schedule)
  elif name == "adamw":
    opt = optax.adamw(schedule, weight_decay=float(config.get("weight_decay", 1e-4)))
  else:
    raise ValueError(f"optimizer.name: expected 'adam' or 'adamw', got {name!r}")
  clip = float(config.get("grad_clip", 0.0))
  return optax.chain(optax.clip_by_global_norm(clip), opt) if clip > 0 else opt
