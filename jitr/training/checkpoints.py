"""Orbax checkpoints: the latest (every epoch, and on SIGTERM) and the best by a metric."""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import orbax.checkpoint as ocp

from jitr.training.state import TrainState


def _to_saveable(state: TrainState) -> dict[str, Any]:
  """The state's arrays (PRNG key as raw key data, which orbax can store); ``model_state``
  (running BatchNorm statistics) included."""
  return {
    "step": state.step,
    "params": state.params,
    "model_state": state.model_state,
    "opt_state": state.opt_state,
    "rng": jax.random.key_data(state.rng),
  }


def _from_saved(saved: dict[str, Any], like: TrainState) -> TrainState:
  return like.replace(
    step=jnp.asarray(saved["step"]),
    params=saved["params"],
    model_state=saved["model_state"],
    opt_state=saved["opt_state"],
    rng=jax.random.wrap_key_data(saved["rng"], impl=jax.random.key_impl(like.rng)),
  )


class Checkpoints:
  """``workdir/checkpoints/latest`` keeps the newest ``keep`` saves;
  ``workdir/checkpoints/best`` keeps the one with the highest ``best_metric``.

  Orbax writes each save to a temporary folder and renames it when complete, so
  an interrupted save never damages the previous checkpoint.
  """

  def __init__(self, workdir: str, *, keep: int = 2, best_metric: str = "rsum"):
    root = os.path.join(os.path.abspath(workdir), "checkpoints")
    self.best_metric = best_metric
    self.latest = ocp.CheckpointManager(
      os.path.join(root, "latest"), options=ocp.CheckpointManagerOptions(max_to_keep=keep)
    )
    self.best = ocp.CheckpointManager(
      os.path.join(root, "best"),
      options=ocp.CheckpointManagerOptions(
        max_to_keep=1, best_fn=lambda m: m[best_metric], best_mode="max"
      ),
    )

  def save_latest(self, state: TrainState) -> None:
    step = int(jax.device_get(state.step))
    if self.latest.latest_step() != step:
      self.latest.save(step, args=ocp.args.StandardSave(_to_saveable(state)))
    self.latest.wait_until_finished()

  def save_best(self, state: TrainState, metrics: dict[str, float]) -> bool:
    """Saves if ``metrics[best_metric]`` beats every earlier best; returns whether it did."""
    if self.best_metric not in metrics:
      raise KeyError(
        f"metrics: no {self.best_metric!r} to rank checkpoints by (has {sorted(metrics)})"
      )
    value = float(metrics[self.best_metric])
    best_step = self.best.best_step()
    if best_step is not None:
      previous = self.best.metrics(best_step)
      if previous is not None and value <= float(previous[self.best_metric]):
        return False
    step = int(jax.device_get(state.step))
    self.best.save(
      step,
      args=ocp.args.StandardSave(_to_saveable(state)),
      metrics={self.best_metric: value},
      force=True,
    )
    self.best.wait_until_finished()
    return True

  def restore(self, like: TrainState, *, which: str = "latest") -> TrainState | None:
    """The latest (or best) saved state shaped like ``like``; ``None`` if there is none."""
    manager = self.latest if which == "latest" else self.best
    step = manager.latest_step() if which == "latest" else manager.best_step()
    if step is None:
      return None
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, _to_saveable(like))
    return _from_saved(manager.restore(step, args=ocp.args.StandardRestore(abstract)), like)

  def close(self) -> None:
    self.latest.close()
    self.best.close()
