"""Optax optimizers of the papers: Adam / AdamW, step decay, global-norm clipping."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import optax

DEFAULT_GROUP = "default"


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


def _adam(schedule: optax.Schedule, config: Mapping[str, Any]) -> optax.GradientTransformation:
  """Adam (no weight decay; ``config`` unused)."""
  del config
  return optax.adam(schedule)


def _adamw(schedule: optax.Schedule, config: Mapping[str, Any]) -> optax.GradientTransformation:
  """AdamW with decoupled ``weight_decay``."""
  return optax.adamw(schedule, weight_decay=float(config["weight_decay"]))


OptimizerBuilder = Callable[[optax.Schedule, Mapping[str, Any]], optax.GradientTransformation]

# ``optimizer.name`` -> ``builder(schedule, config)``.
OPTIMIZERS: Mapping[str, OptimizerBuilder] = {"adam": _adam, "adamw": _adamw}


def module_labels(params: Mapping[str, Any], modules: Mapping[str, float]) -> dict[str, Any]:
  """The group of every parameter leaf: its top-level module's name when ``modules`` has
  it, else :data:`DEFAULT_GROUP`."""
  return {
    key: jax.tree.map(lambda _, k=key: k if k in modules else DEFAULT_GROUP, value)
    for key, value in params.items()
  }


def make_optimizer(
  config: Mapping[str, Any], *, steps_per_epoch: int
) -> optax.GradientTransformation:
  """``clip_by_global_norm(grad_clip)`` then the optimizer of :data:`!OPTIMIZERS` named
  ``config["name"]`` on the step-decay schedule.

  ``config``: a run config's ``optimizer`` group, every key required (their defaults
  live in configs/default.py): ``name`` ('adam' | 'adamw'), ``learning_rate``,
  ``weight_decay`` (AdamW only), ``grad_clip`` (≤ 0 disables), ``decay_epochs``,
  ``decay_factor``, ``module_decay_factors`` (``{top-level params key: factor}``, ``{}``
  for none: those modules decay by their own factor at the same epochs, CVSE's GCN by 0.2
  while the rest decays by 0.1), ``module_lr_factors`` (``{top-level params key: f}``,
  ``{}`` for none: those modules learn at ``f · learning_rate`` on the same schedule,
  VSE∞'s BERT at 0.1×; AdamW's decoupled decay ``lr · wd · p`` uses the module's rate,
  as PyTorch's per-group ``lr``). A module named in either gets its own optimizer on
  ``f · learning_rate · its_factor^{#decays}``; for the elementwise Adam / AdamW that is
  the official single optimizer with one parameter group per module.

  One update per parameter per step, for every network. The official VSRN Adam lists the
  captioning encoder / decoder parameters twice (two Adam steps per iteration for them,
  and their gradients counted twice by ``clip_grad_norm``); jitr does not reproduce that
  (see :mod:`!jitr.models.vsrn`).
  """
  name = config["name"]
  if name not in OPTIMIZERS:
    raise ValueError(f"optimizer.name: expected one of {sorted(OPTIMIZERS)}, got {name!r}")

  def group(decay_factor: float, lr_factor: float) -> optax.GradientTransformation:
    schedule = make_schedule(
      learning_rate=float(config["learning_rate"]) * float(lr_factor),
      steps_per_epoch=steps_per_epoch,
      decay_epochs=tuple(config["decay_epochs"]),
      decay_factor=float(decay_factor),
    )
    return OPTIMIZERS[name](schedule, config)

  decays = dict(config["module_decay_factors"])
  rates = dict(config["module_lr_factors"])
  opt = group(config["decay_factor"], 1.0)
  modules = dict.fromkeys(sorted({*decays, *rates}))
  if modules:
    own = {m: group(decays.get(m, config["decay_factor"]), rates.get(m, 1.0)) for m in modules}
    groups = {DEFAULT_GROUP: opt, **own}
    opt = optax.multi_transform(groups, lambda params: module_labels(params, modules))
  clip = float(config["grad_clip"])
  return optax.chain(optax.clip_by_global_norm(clip), opt) if clip > 0 else opt
