"""The optimizer's config fields (``config.optimizer``), checked before anything is built:
each raises ``ValueError`` in one line naming the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jitr.config_fields import check_number

# Number fields and their range: (smallest value, whether the smallest value is valid).
OPTIMIZER_NUMBERS: dict[str, tuple[float, bool]] = {
  "learning_rate": (0.0, False),
  "grad_clip": (0.0, True),  # 0: no clipping
  "eps": (0.0, False),
  "b2": (0.0, True),
  "layer_decay": (0.0, False),
}
SCHEDULES: tuple[str, ...] = ("step", "cosine")
# Fields holding {module: factor}, each factor > 0.
MODULE_FACTORS: tuple[str, ...] = ("module_decay_factors", "module_lr_factors")


def check_optimizer_config(optimizer: Mapping[str, Any]) -> None:
  """``config.optimizer``: :data:`OPTIMIZER_NUMBERS` in range, every factor of
  :data:`MODULE_FACTORS` a finite number > 0, and each ``decay_epochs`` entry a whole
  number >= 1 (an epoch <= 0 would decay the learning rate from the first step)."""
  for name, (minimum, inclusive) in OPTIMIZER_NUMBERS.items():
    if name in optimizer:
      check_number(f"optimizer.{name}", optimizer[name], minimum, inclusive)
  for field in MODULE_FACTORS:
    modules = optimizer[field]
    if not hasattr(modules, "keys"):
      raise ValueError(
        f"config.optimizer.{field}: expected an object {{module: factor}}, got {modules!r}"
      )
    for module, factor in dict(modules).items():
      check_number(f"optimizer.{field}.{module}", factor, 0.0, False)
  if optimizer["layer_decay"] > 1:
    raise ValueError(
      "config.optimizer.layer_decay: expected a number in (0, 1] (1: one rate for every "
      f"layer), got {optimizer['layer_decay']!r}"
    )
  if optimizer["b2"] >= 1:
    raise ValueError(f"config.optimizer.b2: expected a number in [0, 1), got {optimizer['b2']!r}")
  schedule = optimizer["schedule"]
  if schedule not in SCHEDULES:
    raise ValueError(
      f"config.optimizer.schedule: expected one of {', '.join(SCHEDULES)}, got {schedule!r}"
    )
  warmup = optimizer["warmup_steps"]
  if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
    raise ValueError(f"config.optimizer.warmup_steps: expected a whole number >= 0, got {warmup!r}")
  for name in ("decay_matrices_only",):
    if not isinstance(optimizer[name], bool):
      raise ValueError(f"config.optimizer.{name}: expected True or False, got {optimizer[name]!r}")
  frozen = optimizer["frozen_modules"]
  if isinstance(frozen, str) or not all(isinstance(m, str) for m in tuple(frozen)):
    raise ValueError(
      f"config.optimizer.frozen_modules: expected a list of top-level module names, got {frozen!r}"
    )
  for epoch in tuple(optimizer["decay_epochs"]):
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
      raise ValueError(
        "config.optimizer.decay_epochs: expected whole numbers >= 1 (the epochs after "
        f"which the learning rate decays), got {epoch!r}"
      )
