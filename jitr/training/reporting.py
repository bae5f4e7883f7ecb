"""Training logs: scalars as absl log lines and TensorBoard event files
(:class:`~jitr.training.tensorboard_writer.TensorBoardWriter`, no TensorFlow), a
progress line every few steps (:class:`~jitr.training.progress_report.ProgressReport`:
steps/s, ETA, the share of time spent in evaluation); the results table of a run."""

from __future__ import annotations

import contextlib
import logging as py_logging
import math
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import jax
from absl import logging

from jitr import paths
from jitr.training import validation_history as history
from jitr.training.progress_report import ProgressReport
from jitr.training.tensorboard_writer import TensorBoardWriter

# (metric key, column title) of the results table and of the validation log line.
RESULT_KEYS: tuple[tuple[str, str], ...] = (
  ("full/i2t/R@1", "i2t R@1"),
  ("full/i2t/R@5", "i2t R@5"),
  ("full/i2t/R@10", "i2t R@10"),
  ("full/t2i/R@1", "t2i R@1"),
  ("full/t2i/R@5", "t2i R@5"),
  ("full/t2i/R@10", "t2i R@10"),
  ("full/rsum", "RSUM"),
  ("ndcg/i2t/NDCG@10", "i2t NDCG@10"),
  ("ndcg/t2i/NDCG@10", "t2i NDCG@10"),
  ("exact/i2t/mAP@R", "i2t mAP@R"),
  ("exact/t2i/mAP@R", "t2i mAP@R"),
)

# (metric key, column title) of the class MAP columns the table adds for a dataset with
# class labels (CMAL²R's protocol: a gallery item is relevant when it shares a class).
CLASS_KEYS: tuple[tuple[str, str], ...] = (
  ("class/i2t/mAP", "i2t class MAP"),
  ("class/t2i/mAP", "t2i class MAP"),
  ("class/mAP", "class MAP"),
)


MISSING_CELL = "–"
"""A results-table cell of a metric the evaluated data cannot give (a dash, not ``nan``)."""


def results_table(metrics: Mapping[str, float], title: str) -> str:
  """A one-row Markdown table of :data:`RESULT_KEYS` (and :data:`CLASS_KEYS` when
  ``metrics`` has the class MAP); a metric that is absent (or NaN) is a
  :data:`MISSING_CELL`, and a footnote under the table names those columns and why: NDCG@10
  and mAP@R are measured against a dataset's exact relevance (jitr_shapes has it, a precomp
  folder does not), and ``metrics.json`` leaves their keys out.

  >>> recalls = {key: 50.0 for key, _ in RESULT_KEYS if key.startswith("full/")}
  >>> lines = results_table(recalls, "Test split:").splitlines()
  >>> lines[4].count("50.00"), lines[4].count("–")
  (7, 4)
  >>> lines[6].split(" (")[0]
  '– not measured on this data: i2t NDCG@10, t2i NDCG@10, i2t mAP@R, t2i mAP@R'
  """
  columns = RESULT_KEYS + (CLASS_KEYS if CLASS_KEYS[-1][0] in metrics else ())
  head = "| " + " | ".join(name for _, name in columns) + " |"
  rule = "|" + "---|" * len(columns)
  values = {key: float(metrics.get(key, float("nan"))) for key, _ in columns}
  cells = [MISSING_CELL if math.isnan(v) else f"{v:.2f}" for v in values.values()]
  table = f"{title}\n\n{head}\n{rule}\n| " + " | ".join(cells) + " |\n"
  missing = [name for key, name in RESULT_KEYS if math.isnan(values[key])]
  if missing:
    table += (
      f"\n{MISSING_CELL} not measured on this data: {', '.join(missing)} (a dataset without "
      "exact relevance has no NDCG@10 or mAP@R)\n"
    )
  return table


def headline(metrics: Mapping[str, float]) -> dict[str, float]:
  """The :data:`RESULT_KEYS` and :data:`CLASS_KEYS` present in ``metrics``, as floats."""
  return {key: float(metrics[key]) for key, _ in RESULT_KEYS + CLASS_KEYS if key in metrics}


def format_scalars(scalars: Mapping[str, Any]) -> str:
  """``name=value, ...`` sorted by name, floats to 6 significant digits (clu's log format).

  >>> format_scalars({"train/loss": 0.69168612, "steps": 3})
  'steps=3, train/loss=0.691686'
  """
  return ", ".join(
    f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(scalars.items())
  )


class ScalarWriter:
  """Scalars to absl INFO log lines (``[step] name=value, ...``) and, when ``events`` is
  given (a :class:`~jitr.training.tensorboard_writer.TensorBoardWriter`), to its event file."""

  def __init__(self, events: TensorBoardWriter | None = None):
    self.events = events

  def write_scalars(self, step: int, scalars: Mapping[str, Any]) -> None:
    """Logs ``scalars`` at ``step`` and appends them to the event file."""
    logging.info("[%d] %s", step, format_scalars(scalars))
    if self.events is not None:
      self.events.write_scalars(step, scalars)

  def flush(self) -> None:
    """Flushes the log and the event file."""
    logging.flush()
    if self.events is not None:
      self.events.flush()

  def close(self) -> None:
    """Flushes the log, flushes and closes the event file."""
    logging.flush()
    if self.events is not None:
      self.events.close()


def default_writer(workdir: str) -> ScalarWriter:
  """Log lines, plus on process 0 one event file in ``<workdir>/tensorboard`` (the other
  processes of a multi-process job only log)."""
  if jax.process_index() > 0:
    return ScalarWriter()
  return ScalarWriter(TensorBoardWriter(os.path.join(paths.absolute(workdir), "tensorboard")))


class TrainReporter:
  """``on_step`` / ``on_validation`` / ``on_epoch`` hooks of :func:`jitr.training.loop.fit`
  (:class:`~jitr.training.loop.LoopHooks`).

  Every ``every_steps`` steps (and at the last) the step's metrics go to the
  writer as ``train/<name>``; :class:`~jitr.training.progress_report.ProgressReport`
  logs steps/s and the ETA and writes ``steps_per_sec`` (and ``uptime``); each
  validation's :func:`headline` metrics go out as ``val/<key>`` at its step and, on
  process 0, into ``<workdir>/validation.json``
  (:mod:`!jitr.training.validation_history`). ``writer``: any object with
  ``write_scalars(step, {name: value})`` and ``flush()`` (``close()`` is called when it
  has one); it defaults to :func:`default_writer` (log lines, and
  ``<workdir>/tensorboard`` on process 0).
  ``work_clock``: seconds of training-step time so far, the clock of the steps/s rate
  (:class:`~jitr.training.progress_report.ProgressReport`).
  """

  def __init__(
    self,
    workdir: str,
    *,
    total_steps: int,
    steps_per_epoch: int,
    every_steps: int,
    writer: Any = None,
    work_clock: Callable[[], float] | None = None,
  ):
    if every_steps <= 0:
      raise ValueError(f"config.log_every_steps: expected a positive step count, got {every_steps}")
    self.total_steps, self.steps_per_epoch, self.every_steps = (
      total_steps,
      steps_per_epoch,
      every_steps,
    )
    self.writer = writer if writer is not None else default_writer(workdir)
    self.history_path = history.history_path(workdir) if jax.process_index() == 0 else None
    self.history = history.read_history(self.history_path) if self.history_path else []
    self.progress = ProgressReport(
      total_steps=total_steps, every_steps=every_steps, writer=self.writer, work_clock=work_clock
    )

  def on_step(self, step: int, metrics: Mapping[str, Any]) -> None:
    self.progress(step)
    if step % self.every_steps == 0 or step == self.total_steps:
      values = jax.device_get(dict(metrics))
      self.writer.write_scalars(step, {f"train/{k}": float(v) for k, v in values.items()})

  def on_validation(self, step: int, metrics: Mapping[str, float]) -> None:
    values = headline(metrics)
    if values:
      self.writer.write_scalars(step, {f"val/{k}": v for k, v in values.items()})
    if self.history_path:
      self.history = history.with_validation(self.history, step, self.steps_per_epoch, values)
      history.write_history(self.history_path, self.history, self.steps_per_epoch)

  def on_epoch(self, epoch: int, metrics: Mapping[str, float]) -> None:
    del epoch, metrics  # its validation went out through on_validation
    self.writer.flush()

  @contextlib.contextmanager
  def timed(self, name: str) -> Iterator[None]:
    """Counts the block's time as ``name`` in the progress line (e.g. ``eval``)."""
    with self.progress.timed(name):
      yield

  def timed_fn(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with every call counted as ``name``."""

    def timed_call(*args: Any, **kwargs: Any) -> Any:
      with self.timed(name):
        return fn(*args, **kwargs)

    return timed_call

  def close(self) -> None:
    """Flushes the writer and closes it (when it has ``close``)."""
    self.writer.flush()
    close = getattr(self.writer, "close", None)
    if close is not None:
      close()


class QuietLibraries:
  """A logging filter dropping INFO records of orbax and TFDS (they log every file
  they touch) and of JAX's backend probing ("Unable to initialize backend 'tpu'");
  install with :func:`quiet_library_info_logs`."""

  NOISY = ("/orbax/", "/tensorflow_datasets/", "/jax/_src/xla_bridge.py")

  def filter(self, record: Any) -> bool:
    path = record.pathname.replace(os.sep, "/")
    return record.levelno >= py_logging.WARNING or not any(part in path for part in self.NOISY)


def quiet_library_info_logs() -> None:
  """Installs :class:`QuietLibraries` on absl's log handler."""
  logging.get_absl_handler().addFilter(QuietLibraries())
