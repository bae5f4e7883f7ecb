"""Orbax checkpoints: the latest (every epoch, and on SIGTERM) and the best by a metric.

Every saved step carries ``jitr_manifest.json`` (size and SHA-256 of each of its files,
:mod:`jitr.training.checkpoint_manifest`), written by process 0 once every process's
files are committed. A step is restored only when it matches its manifest; a step
without one (an interrupted save) is not trusted. Restoring ``latest`` falls back to
the newest step that verifies (and logs which was skipped and why); a save that runs
out of disk space removes its temporary folder and raises :class:`DiskFullError`.
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
from jax.experimental import multihost_utils

from jitr.training.checkpoint_manifest import verify_manifest, write_manifest
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
  """The checkpoint to restore is damaged, and so is every one it may fall back to."""


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


def _all_processes_reach(name: str) -> None:
  """A barrier across the JAX processes of the job (nothing to wait for with one)."""
  if jax.process_count() > 1:
    multihost_utils.sync_global_devices(name)


def step_dir(manager: ocp.CheckpointManager, step: int) -> str:
  """The folder of ``manager``'s checkpoint ``step``."""
  return os.path.join(os.fspath(manager.directory), str(step))


def seal(manager: ocp.CheckpointManager, step: int) -> None:
  """Writes the manifest of ``manager``'s finished ``step``: after every process's files
  are committed, by process 0 alone; every process returns once it is written."""
  manager.wait_until_finished()
  _all_processes_reach(f"jitr_checkpoint_committed_{step}")
  if jax.process_index() == 0:
    write_manifest(step_dir(manager, step))
  _all_processes_reach(f"jitr_checkpoint_sealed_{step}")


def _drop_damaged(manager: ocp.CheckpointManager, steps: list[int], why: str) -> None:
  """Deletes each of ``steps`` that does not match its manifest, warning which and why."""
  for step in steps:
    reason = verify_manifest(step_dir(manager, step))
    if reason is not None:
      logging.warning(
        "deleting damaged checkpoint %s (%s): %s", step_dir(manager, step), why, reason
      )
      manager.delete(step)


def first_damaged_step(folder: str) -> tuple[str, str] | None:
  """``(step folder, reason)`` of the newest step under ``folder`` that does not match its
  manifest, or ``None`` when every step does (or there is none)."""
  if not os.path.isdir(folder):
    return None
  steps = sorted((int(n) for n in os.listdir(folder) if n.isdigit()), reverse=True)
  for step in steps:
    path = os.path.join(folder, str(step))
    reason = verify_manifest(path)
    if reason is not None:
      return path, reason
  return None


def _open_manager(folder: str, options: ocp.CheckpointManagerOptions) -> ocp.CheckpointManager:
  """Orbax's manager of ``folder``. Orbax reads every step's metadata and metrics here; when
  that fails and a step does not match its manifest, one :class:`CheckpointCorruptError`
  names the damaged file."""
  try:
    return ocp.CheckpointManager(folder, options=options)
  except Exception as err:
    damaged = first_damaged_step(folder)
    if damaged is None:
      raise
    path, reason = damaged
    raise CheckpointCorruptError(
      f"checkpoint {path} cannot be read: {reason}; move that folder away to use the others"
    ) from err


def _first_line(err: BaseException) -> str:
  """The first line of ``err``'s message (at most 200 characters), or its type's name."""
  text = str(err).strip()
  return text.splitlines()[0][:200] if text else type(err).__name__


class Checkpoints:
  """``workdir/checkpoints/latest`` keeps the newest ``keep`` saves;
  ``workdir/checkpoints/best`` keeps the one with the highest ``best_metric``.

  Orbax writes each save to a temporary folder and renames it when complete, so
  an interrupted save never damages the previous checkpoint; the step's manifest is
  written last (:func:`seal`), so a step without one is never restored.
  """

  def __init__(self, workdir: str, *, keep: int = 2, best_metric: str = "rsum"):
    root = os.path.join(os.path.abspath(workdir), "checkpoints")
    self.best_metric = best_metric
    self.latest = _open_manager(
      os.path.join(root, "latest"), ocp.CheckpointManagerOptions(max_to_keep=keep)
    )
    try:
      self.best = _open_manager(
        os.path.join(root, "best"),
        ocp.CheckpointManagerOptions(
          max_to_keep=1, best_fn=lambda m: m[best_metric], best_mode="max"
        ),
      )
    except BaseException:
      self.latest.close()
      raise

  def save_latest(self, state: TrainState) -> None:
    """Saves ``state`` as the latest checkpoint (kept if that step is already saved intact).

    Damaged steps at or after this one (the ones a restore skipped) are deleted first, so
    the new save takes their place."""
    step = int(jax.device_get(state.step))
    later = [s for s in self.latest.all_steps() if s >= step]
    _drop_damaged(self.latest, later, f"replaced by the save of step {step}")
    if step in self.latest.all_steps():
      return
    with self._reporting_disk_full(self.latest, step):
      self.latest.save(step, args=ocp.args.StandardSave(_to_saveable(state)))
      seal(self.latest, step)

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
    """Saves if ``metrics[best_metric]`` beats every earlier best, or the earlier best is
    damaged (it is deleted); returns whether it saved."""
    if self.best_metric not in metrics:
      raise KeyError(
        f"metrics: no {self.best_metric!r} to rank checkpoints by (has {sorted(metrics)})"
      )
    value = float(metrics[self.best_metric])
    best_step = self.best.best_step()
    if best_step is not None:
      previous = self.best.metrics(best_step)
      if previous is not None and value <= float(previous[self.best_metric]):
        if verify_manifest(step_dir(self.best, best_step)) is None:
          return False
        _drop_damaged(self.best, [best_step], "a new best is saved in its place")
    step = int(jax.device_get(state.step))
    with self._reporting_disk_full(self.best, step):
      self.best.save(
        step,
        args=ocp.args.StandardSave(_to_saveable(state)),
        metrics={self.best_metric: value},
        force=True,
      )
      seal(self.best, step)
    return True

  def restore(
    self, like: TrainState, *, which: str = "latest", fallback: bool = True
  ) -> TrainState | None:
    """The latest (or best) saved state shaped like ``like``; ``None`` if there is none.

    A step is restored only when it matches its ``jitr_manifest.json``. With
    ``fallback``, a damaged step is skipped (with a warning naming it and the damaged
    file) for the newest intact one of the same folder (for ``best``: the best one
    first, then the others newest first); without, only the latest (best) is tried.

    Raises:
      CheckpointCorruptError: there are checkpoints but none that may be tried can be
        restored (one line naming each damaged file).
    """
    manager = self.latest if which == "latest" else self.best
    first = manager.latest_step() if which == "latest" else manager.best_step()
    if first is None:
      return None
    steps = [first]
    if fallback:
      steps += sorted((s for s in manager.all_steps() if s != first), reverse=True)
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, _to_saveable(like))
    folder = os.fspath(manager.directory)
    failures = []
    for step in steps:
      reason = verify_manifest(step_dir(manager, step))
      if reason is None:
        try:
          saved = manager.restore(step, args=ocp.args.StandardRestore(abstract))
        except Exception as err:  # orbax/tensorstore raise many types for damaged files
          reason = f"{type(err).__name__}: {_first_line(err)}"
      if reason is not None:
        failures.append(f"step {step} ({reason})")
        logging.warning(
          "checkpoint %s is damaged%s: %s",
          step_dir(manager, step),
          ", trying an older one" if step != steps[-1] else "",
          reason,
        )
        continue
      if failures:
        logging.warning(
          "restored checkpoint step %d from %s after skipping the damaged %s",
          step,
          folder,
          "; ".join(failures),
        )
      return _from_saved(saved, like)
    if not fallback:
      raise CheckpointCorruptError(
        f"checkpoint {step_dir(manager, first)} cannot be restored: {reason}"
      )
    raise CheckpointCorruptError(
      f"{folder}: no checkpoint can be restored ({'; '.join(failures)}); "
      "delete the folder to start again from scratch"
    )

  def close(self) -> None:
    self.latest.close()
    self.best.close()
