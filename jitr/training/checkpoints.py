"""Orbax checkpoints: the latest (every epoch, and on SIGTERM) and the best by a metric.

Restoring falls back to the newest intact checkpoint when a newer one is damaged
(and logs which); a save that runs out of disk space removes its temporary folder
and raises :class:`DiskFullError`.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import shutil
from typing import Any

import jax
import jax.numpy as jnp
import orbax.checkpoint as ocp
from absl import logging

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


class DiskFullError(OSError):
  """A checkpoint could not be written: no space left on the device."""


class CheckpointCorruptError(ValueError):
  """Every checkpoint of a folder is damaged (none can be restored)."""


def _caused_by_disk_full(err: BaseException) -> bool:
  """Whether ``err`` or an exception it was raised from or during is ``ENOSPC``."""
  seen = set()
  while err is not None and id(err) not in seen:
    seen.add(id(err))
    if isinstance(err, OSError) and err.errno == errno.ENOSPC:
      return True
    err = err.__cause__ or err.__context__
  return False


def _remove_temporaries(folder: str) -> list[str]:
  """Removes orbax's unfinished save folders (``*.orbax-checkpoint-tmp-*``) under ``folder``."""
  stale = sorted(glob.glob(os.path.join(glob.escape(folder), "*.orbax-checkpoint-tmp*")))
  for path in stale:
    with contextlib.suppress(FileNotFoundError):
      shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
  return stale


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
      with self._reporting_disk_full(self.latest, step):
        self.latest.save(step, args=ocp.args.StandardSave(_to_saveable(state)))
        self.latest.wait_until_finished()

  @contextlib.contextmanager
  def _reporting_disk_full(self, manager: ocp.CheckpointManager, step: int):
    """Turns a save that ran out of space into :class:`DiskFullError` (temporaries removed)."""
    try:
      yield
    except Exception as err:
      if not _caused_by_disk_full(err):
        raise
      folder = os.fspath(manager.directory)
      removed = _remove_temporaries(folder)
      raise DiskFullError(
        errno.ENOSPC,
        f"disk full: could not save checkpoint step {step} in {folder} "
        f"({len(removed)} temporary folder(s) removed; the earlier checkpoints are intact); "
        "free some space and run the same command again to resume",
      ) from None

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
    with self._reporting_disk_full(self.best, step):
      self.best.save(
        step,
        args=ocp.args.StandardSave(_to_saveable(state)),
        metrics={self.best_metric: value},
        force=True,
      )
      self.best.wait_until_finished()
    return True

  def restore(self, like: TrainState, *, which: str = "latest") -> TrainState | None:
    """The latest (or best) saved state shaped like ``like``; ``None`` if there is none.

    A damaged checkpoint is skipped (with a warning naming it) for the newest
    intact one of the same folder (for ``best``: the best one first, then the
    others newest first).

    Raises:
      CheckpointCorruptError: there are checkpoints but none can be restored.
    """
    manager = self.latest if which == "latest" else self.best
    first = manager.latest_step() if which == "latest" else manager.best_step()
    if first is None:
      return None
    steps = [first] + sorted((s for s in manager.all_steps() if s != first), reverse=True)
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, _to_saveable(like))
    folder = os.fspath(manager.directory)
    failures = []
    for step in steps:
      try:
        saved = manager.restore(step, args=ocp.args.StandardRestore(abstract))
      except Exception as err:  # orbax/tensorstore raise many types for damaged files
        reason = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
        failures.append(f"step {step} ({type(err).__name__}: {reason})")
        logging.warning(
          "checkpoint %s/%d is damaged, trying an older one: %s", folder, step, reason
        )
        continue
      if failures:
        logging.warning(
          "restored checkpoint step %d from %s: the newer %s could not be read",
          step,
          folder,
          ", ".join(failures),
        )
      return _from_saved(saved, like)
    raise CheckpointCorruptError(
      f"{folder}: no checkpoint can be restored ({'; '.join(failures)}); "
      "delete the folder to start again from scratch"
    )

  def close(self) -> None:
    self.latest.close()
    self.best.close()
