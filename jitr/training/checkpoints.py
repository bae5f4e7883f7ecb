"""Orbax checkpoints: the latest (every epoch, and on SIGTERM) and the best by a metric.

Every saved step carries ``jitr_manifest.json`` (size and SHA-256 of each of its files,
:mod:`jitr.training.checkpoint_manifest`), written by process 0 once every process's
files are committed. A step is restored only when it matches its manifest; a step
without one (an interrupted save) is not trusted. Restoring ``latest`` falls back to
the newest step that verifies (and logs which was skipped and why); a save that runs
out of disk space removes orbax's temporary folder and the step's folder without a
manifest and raises :class:`DiskFullError`; older steps are deleted only after a new one
is sealed (:func:`rotate`).

Saves are synchronous (the manifest is written right after each one anyway), so no orbax
thread outlives a failed save. Orbax's own ERROR records of a failure that jitr reports
itself become one WARNING line each without their traceback
(:class:`OrbaxErrorsInOneLine`), and the "Event loop is closed" callbacks of tensorstore
reads and writes that finish after a failed restore or save closed their event loop are
dropped (:func:`drop_closed_loop_callbacks`): a damaged checkpoint or a full disk ends in
the one line of the error.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import logging as py_logging
import math
import os
import re
import sys
from typing import Any

import jax
import jax.numpy as jnp
import orbax.checkpoint as ocp
from absl import logging

from jitr import fileio, paths
from jitr.training.checkpoint_manifest import MANIFEST_NAME, verify_manifest, write_manifest
from jitr.training.distributed import all_processes_reach
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
  """The checkpoint to restore is damaged, and so is every one it may fall back to.

  :attr:`damage` says which checkpoint and files are damaged; the message adds the
  ``advice`` for the run that owns the workdir (a reader of another run's workdir, a
  teacher or an ``init_from`` source, gives its own advice after :attr:`damage`)."""

  def __init__(self, damage: str, advice: str = ""):
    super().__init__(f"{damage}; {advice}" if advice else damage)
    self.damage = damage


def _remove_temporaries(folder: str) -> list[str]:
  """Removes orbax's unfinished save folders (``*.orbax-checkpoint-tmp*``) under ``folder``;
  returns their paths."""
  stale = paths.glob(folder, "*.orbax-checkpoint-tmp*")
  for path in stale:
    _remove_path(path)
  return stale


def _remove_path(path: str) -> None:
  """Removes the file or folder ``path`` (nothing when it is gone)."""
  with contextlib.suppress(FileNotFoundError):
    paths.rmtree(path) if paths.isdir(path) else paths.remove(path)


def _remove_unsealed(folder: str, step: int) -> bool:
  """Removes ``folder/step`` when it has no manifest (a save that did not finish: never
  restored, so only its space is lost); returns whether it did."""
  path = os.path.join(folder, str(step))
  if not paths.isdir(path) or paths.isfile(os.path.join(path, MANIFEST_NAME)):
    return False
  _remove_path(path)
  return True


def disk_full_message(step: int, folder: str) -> str:
  """The one line of a checkpoint save that ran out of space."""
  return (
    f"disk full: could not save checkpoint step {step} in {folder}; "
    "free space and run the same command to resume"
  )


class OrbaxErrorsInOneLine(py_logging.Filter):
  """A filter of the ``absl`` and ``asyncio`` loggers: an ERROR record with a traceback that
  orbax logged becomes a WARNING with the first line of its message and no traceback (a
  save or restore failing, which jitr reports as its own one-line error); asyncio's "Task
  (Future, _GatheringFuture) exception was never retrieved" for one of orbax's tasks is
  dropped (it comes when the task is collected, possibly after that line); every other
  record passes unchanged."""

  def filter(self, record: py_logging.LogRecord) -> bool:
    if _unretrieved_orbax_task(record):
      return False
    if record.levelno >= py_logging.ERROR and record.exc_info and _about_orbax(record):
      record.msg, record.args = _first_line_of(record.getMessage()), ()
      record.exc_info = record.exc_text = None
      record.levelno, record.levelname = py_logging.WARNING, "WARNING"
    return True


# asyncio's "Task / Future / _GatheringFuture exception was never retrieved" (the class name
# of the task or future first).
UNRETRIEVED = re.compile(r"\w+ exception was never retrieved")


def _unretrieved_orbax_task(record: py_logging.LogRecord) -> bool:
  """Whether ``record`` is asyncio's "Task / Future / _GatheringFuture exception was never
  retrieved" for one of orbax's tasks or futures (raised in orbax's code, or tensorstore's
  full disk): logged when it is garbage-collected, which can be after jitr's one line
  reported the failed save or restore that it was part of; a future that tensorstore failed
  holds its error without a traceback (:func:`_tensorstore_status`)."""
  message = record.msg if isinstance(record.msg, str) else ""
  if record.name != "asyncio" or not UNRETRIEVED.match(message) or not record.exc_info:
    return False
  err = record.exc_info[1]
  return _about_orbax(record) or fileio.is_disk_full(err) or _tensorstore_status(err)


# A tensorstore error as a failed future holds it: an absl status code, then the driver or
# key-value store that failed (e.g. 'DATA_LOSS: Error opening "cast" driver: ...').
TENSORSTORE_STATUS = re.compile(r"[A-Z_]+: .*(driver|OCDBT|kvstore)")


def _tensorstore_status(err: BaseException | None) -> bool:
  """Whether ``err`` is a tensorstore read or write error without a traceback (set on a
  future in tensorstore's C++ code): jitr reads and writes tensorstore only through orbax."""
  return (
    err is not None and err.__traceback__ is None and TENSORSTORE_STATUS.match(str(err)) is not None
  )


def _about_orbax(record: py_logging.LogRecord) -> bool:
  """Whether ``record`` was logged by orbax's code, or its exception was raised there."""
  paths = [record.pathname]
  tb = record.exc_info[2] if record.exc_info else None
  while tb is not None:
    paths.append(tb.tb_frame.f_code.co_filename)
    tb = tb.tb_next
  return any("/orbax/" in path.replace(os.sep, "/") for path in paths)


def _first_line_of(text: str) -> str:
  """The first non-empty line of ``text`` (``""`` when there is none)."""
  return next((line for line in text.splitlines() if line.strip()), "")


def quiet_orbax_errors() -> None:
  """Installs :class:`OrbaxErrorsInOneLine` on the ``absl`` and ``asyncio`` loggers (once
  per process)."""
  for name in ("absl", "asyncio"):
    logger = py_logging.getLogger(name)
    if not any(isinstance(f, OrbaxErrorsInOneLine) for f in logger.filters):
      logger.addFilter(OrbaxErrorsInOneLine())


def is_closed_loop_callback(unraisable: Any) -> bool:
  """Whether an unraisable error (``sys.unraisablehook``'s argument) is asyncio's
  ``RuntimeError("Event loop is closed")``: a tensorstore read or write finishing after the
  orbax call that started it failed and closed its event loop."""
  err = getattr(unraisable, "exc_value", None)
  return isinstance(err, RuntimeError) and str(err) == "Event loop is closed"


def drop_closed_loop_callbacks() -> None:
  """Makes ``sys.unraisablehook`` drop :func:`is_closed_loop_callback` errors (once per
  process); every other unraisable error goes to the hook installed before."""
  previous = sys.unraisablehook
  if getattr(previous, "drops_closed_loop_callbacks", False):
    return

  def hook(unraisable: Any) -> None:
    if not is_closed_loop_callback(unraisable):
      previous(unraisable)

  hook.drops_closed_loop_callbacks = True
  sys.unraisablehook = hook


def rotate(manager: ocp.CheckpointManager, keep: int) -> None:
  """Deletes every step of ``manager`` but the newest ``keep`` that have a manifest (a
  step without one is an interrupted save, never restored)."""
  steps = sorted(manager.all_steps(), reverse=True)
  sealed = [s for s in steps if paths.isfile(os.path.join(step_dir(manager, s), MANIFEST_NAME))]
  for step in sorted(set(steps) - set(sealed[:keep])):
    manager.delete(step)


def step_dir(manager: ocp.CheckpointManager, step: int) -> str:
  """The folder of ``manager``'s checkpoint ``step``."""
  return os.path.join(os.fspath(manager.directory), str(step))


def seal(manager: ocp.CheckpointManager, step: int) -> None:
  """Writes the manifest of ``manager``'s finished ``step``: after every process's files
  are committed, by process 0 alone; every process returns once it is written."""
  manager.wait_until_finished()
  all_processes_reach(f"jitr_checkpoint_committed_{step}")
  if jax.process_index() == 0:
    write_manifest(step_dir(manager, step))
  all_processes_reach(f"jitr_checkpoint_sealed_{step}")


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
  if not paths.isdir(folder):
    return None
  steps = sorted((int(n) for n in paths.listdir(folder) if n.isdigit()), reverse=True)
  for step in steps:
    path = os.path.join(folder, str(step))
    reason = verify_manifest(path)
    if reason is not None:
      return path, reason
  return None


def unrestorable(folder: str, failures: list[str]) -> str:
  """``FOLDER: no checkpoint can be restored (step N (why); ...)``: what a restore of
  ``folder`` says when every step it tried failed (``failures``: ``step N (why)`` each)."""
  return f"{folder}: no checkpoint can be restored ({'; '.join(failures)})"


def all_steps_damaged(folder: str) -> str | None:
  """:func:`unrestorable`'s line for ``folder`` when it holds steps and none matches its
  manifest (no restore of it could succeed), else ``None``; read-only, orbax is not
  opened (a check before anything is written)."""
  if not paths.isdir(folder):
    return None
  steps = sorted((int(n) for n in paths.listdir(folder) if n.isdigit()), reverse=True)
  failures = []
  for step in steps:
    reason = verify_manifest(os.path.join(folder, str(step)))
    if reason is None:
      return None
    failures.append(f"step {step} ({reason})")
  return unrestorable(folder, failures) if failures else None


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
      f"checkpoint {path} cannot be read: {reason}", "move that folder away to use the others"
    ) from err


def _first_line(err: BaseException) -> str:
  """The first line of ``err``'s message (at most 200 characters), or its type's name."""
  text = str(err).strip()
  return text.splitlines()[0][:200] if text else type(err).__name__


class Checkpoints:
  """``workdir/checkpoints/latest`` keeps the newest ``keep`` saves;
  ``workdir/checkpoints/best`` keeps the one with the highest ``best_metric`` (``rsum``, or
  a labelled vector dataset's ``class/mAP``). Older steps are deleted only once the new one
  is sealed (orbax keeps every step; :func:`rotate`), so a save that fails leaves every
  step that was there. ``best/`` holds one step, so a reader that restores it (``jitr-eval``,
  ``init_from``) finds it whatever metric ranked it: a step saved with another metric ranks
  last.

  Orbax writes each save to a temporary folder and renames it when complete, so
  an interrupted save never damages the previous checkpoint; the step's manifest is
  written last (:func:`seal`), so a step without one is never restored.
  """

  def __init__(self, workdir: str, *, keep: int = 2, best_metric: str = "rsum"):
    root = os.path.join(paths.absolute(workdir), "checkpoints")
    self.best_metric = best_metric
    self.keep = keep
    self._closed = False
    quiet_orbax_errors()
    drop_closed_loop_callbacks()  # a failed save or restore closes its loop mid-flight
    self.latest = _open_manager(
      os.path.join(root, "latest"),
      ocp.CheckpointManagerOptions(enable_async_checkpointing=False),
    )
    try:
      self.best = _open_manager(
        os.path.join(root, "best"),
        ocp.CheckpointManagerOptions(
          best_fn=lambda m: m.get(best_metric, -math.inf),
          best_mode="max",
          enable_async_checkpointing=False,
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
    with self._saving(self.latest, step):
      self.latest.save(step, args=ocp.args.StandardSave(_to_saveable(state)))
      seal(self.latest, step)
    rotate(self.latest, self.keep)

  @contextlib.contextmanager
  def _saving(self, manager: ocp.CheckpointManager, step: int):
    """Around a save of ``step`` by ``manager``. First, process 0 removes the unfinished
    save folders that an interrupted save left (only this run writes the folder, and the
    other processes start writing after orbax's barrier). A save that runs out of space
    (an ``OSError`` or orbax's ``ValueError`` from tensorstore saying so) becomes
    :class:`DiskFullError`, once orbax's background threads have finished and its temporary
    folders and the step's folder without a manifest are removed, so the earlier steps are
    the ones left and nothing is logged after the error."""
    folder = os.fspath(manager.directory)
    if jax.process_index() == 0:
      _remove_temporaries(folder)
    try:
      yield
    except Exception as err:
      if not fileio.is_disk_full(err):
        raise
      with contextlib.suppress(Exception):  # orbax's threads still writing metadata
        manager.wait_until_finished()
      gc.collect()  # orbax's failed futures log (and are filtered) now, not after the line
      if jax.process_index() == 0:  # one remover of the shared folder
        _remove_temporaries(folder)
        _remove_unsealed(folder, step)
      with contextlib.suppress(Exception):  # orbax's list of steps, read from disk again
        manager.reload()
      raise DiskFullError(errno.ENOSPC, disk_full_message(step, folder)) from None

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
    with self._saving(self.best, step):
      self.best.save(
        step,
        args=ocp.args.StandardSave(_to_saveable(state)),
        metrics={self.best_metric: value},
        force=True,
      )
      seal(self.best, step)
    for other in sorted(self.best.all_steps()):  # the earlier best, once this one is sealed
      if other != step:
        self.best.delete(other)
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
      unrestorable(folder, failures), "delete the folder to start again from scratch"
    )

  def close(self) -> None:
    """Waits for orbax's saves in flight and closes both managers (once)."""
    if self._closed:
      return
    self._closed = True
    try:
      self.latest.close()
    finally:
      self.best.close()

  def __enter__(self) -> Checkpoints:
    return self

  def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
    """Closes the managers; while an error is raised, an error of the close (a save that
    failed with it) is dropped so that the first one is what the caller sees."""
    if exc is None:
      self.close()
      return
    with contextlib.suppress(Exception):
      self.close()
