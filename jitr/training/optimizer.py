"""Optax optimizers of the papers and of CLIP fine-tuning: Adam / AdamW, step decay or
open_clip's warmup + cosine schedule, global-norm clipping, AdamW's decay on matrices only,
frozen modules (LiT), layer-wise learning-rate decay."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
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


def cosine_schedule(*, learning_rate: float, warmup_steps: int, total_steps: int) -> optax.Schedule:
  """open_clip's ``cosine_lr``: ``lr · (t + 1) / W`` for the first ``W = warmup_steps``
  steps ``t``, then ``lr · (1 + cos(π (t − W) / (T − W))) / 2`` down to 0 at
  ``T = total_steps``."""
  warmup, total = int(warmup_steps), max(int(total_steps), int(warmup_steps) + 1)

  def schedule(step):
    t = jnp.asarray(step, jnp.float32)
    warm = learning_rate * (t + 1) / max(warmup, 1)
    progress = jnp.clip((t - warmup) / (total - warmup), 0.0, 1.0)
    cosine = 0.5 * (1 + jnp.cos(jnp.pi * progress)) * learning_rate
    return jnp.where(t < warmup, warm, cosine)

  return schedule


def _betas(config: Mapping[str, Any]) -> dict[str, float]:
  """Adam's ``b2`` and ``eps`` of ``config``."""
  return {"b2": float(config["b2"]), "eps": float(config["eps"])}


def matrices(params: Any) -> Any:
  """``True`` for the leaves of rank >= 2: what open_clip's AdamW decays (biases, norms'
  scales, the class token and the logit scale and bias are excluded)."""
  return jax.tree.map(lambda p: jnp.ndim(p) >= 2, params)


def _adam(schedule: optax.Schedule, config: Mapping[str, Any]) -> optax.GradientTransformation:
  """Adam (no weight decay)."""
  return optax.adam(schedule, **_betas(config))


def _adamw(schedule: optax.Schedule, config: Mapping[str, Any]) -> optax.GradientTransformation:
  """AdamW with decoupled ``weight_decay``, on the matrices only with
  ``decay_matrices_only``."""
  mask = matrices if config["decay_matrices_only"] else None
  return optax.adamw(
    schedule, weight_decay=float(config["weight_decay"]), mask=mask, **_betas(config)
  )


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


def scale_by_layer(decay: float, layer_ranks: Callable[[Any], Any]) -> optax.GradientTransformation:
  """Multiplies each update by ``decay^r``, ``r = layer_ranks(updates)``'s leaf: the
  parameter's layers below the output (no state). After Adam / AdamW it scales the whole
  step, decoupled decay included, as a per-layer learning rate does in PyTorch."""

  def init(params):
    del params
    return optax.EmptyState()

  def update(updates, state, params=None):
    del params
    ranks = layer_ranks(updates)
    return jax.tree.map(lambda u, r: u * jnp.asarray(decay**r, u.dtype), updates, ranks), state

  return optax.GradientTransformation(init, update)


def make_optimizer(
  config: Mapping[str, Any],
  *,
  steps_per_epoch: int,
  total_steps: int | None = None,
  layer_ranks: Callable[[Any], Any] | None = None,
) -> optax.GradientTransformation:
  """``clip_by_global_norm(grad_clip)`` then the optimizer of :data:`!OPTIMIZERS` named
  ``config["name"]`` on its schedule: step decay, or with ``schedule = "cosine"`` open_clip's
  warmup + cosine (:func:`!cosine_schedule`, ``warmup_steps`` then down to 0 at
  ``total_steps``, the run's last step). ``b2`` and ``eps``: Adam's;
  ``decay_matrices_only``: AdamW decays only the parameters of rank >= 2 (open_clip's
  exclusions). ``frozen_modules`` (top-level params keys): never updated, and left out of
  the clipped norm (LiT's locked image tower: ``("visual",)``). ``layer_decay`` (``d`` in
  (0, 1]): a parameter ``r`` layers below the output learns at ``d^r`` times its rate
  (:func:`!scale_by_layer`; ``layer_ranks``: the model's
  :attr:`!jitr.models.RetrievalModel.layer_ranks`, required when ``d < 1``).

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
    learning_rate = float(config["learning_rate"]) * float(lr_factor)
    if config["schedule"] == "cosine":
      schedule = cosine_schedule(
        learning_rate=learning_rate,
        warmup_steps=int(config["warmup_steps"]),
        total_steps=total_steps or steps_per_epoch,
      )
    else:
      schedule = make_schedule(
        learning_rate=learning_rate,
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
  opt = optax.chain(optax.clip_by_global_norm(clip), opt) if clip > 0 else opt
  frozen = dict.fromkeys(config["frozen_modules"])
  if frozen:
    groups = {DEFAULT_GROUP: opt, **{m: optax.set_to_zero() for m in frozen}}
    opt = optax.multi_transform(groups, lambda params: module_labels(params, frozen))
  decay = float(config["layer_decay"])
  if decay == 1.0:
    return opt
  if layer_ranks is None:
    raise ValueError(
      f"config.optimizer.layer_decay={decay:g}: the network declares no layers (the "
      '"clip" towers do); expected 1.0'
    )
  return optax.chain(opt, scale_by_layer(decay, layer_ranks))
