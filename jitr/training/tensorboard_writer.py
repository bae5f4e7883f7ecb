"""TensorBoard scalars without TensorFlow: one event file, written with the ``tensorboard``
package's protos and record framing only.

Each scalar is stored as TF2's ``tf.summary.scalar`` stores it: a ``Summary.Value`` whose
``tensor`` is a ``DT_FLOAT`` scalar ``TensorProto`` (its 4 little-endian bytes in
``tensor_content``) and whose ``metadata`` names the ``scalars`` plugin, so TensorBoard
shows it and ``EventAccumulator(...).Tensors(tag)`` reads it back. The file is named as
TensorFlow names its own (``events.out.tfevents.<seconds>.<host>.<pid>.<n>.v2``) and starts
with the ``brain.Event:2`` version record.

``tensorboard.summary.writer.event_file_writer.EventFileWriter`` is not used: it opens its
file through ``tensorboard.compat.tf``, which imports TensorFlow whenever it is installed.
Writes here are synchronous appends to a buffered local file (a few hundred bytes a
record): :meth:`TensorBoardWriter.flush` hands them to the operating system.
"""

from __future__ import annotations

import itertools
import os
import socket
import time
from collections.abc import Mapping

import numpy as np
from tensorboard.compat.proto import (
  event_pb2,
  summary_pb2,
  tensor_pb2,
  tensor_shape_pb2,
  types_pb2,
)
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.summary.writer.record_writer import RecordWriter

from jitr import paths

EVENTS_PREFIX = "events.out.tfevents"
"""Every event file's name starts with this (TensorBoard finds them by ``tfevents``)."""

_file_numbers = itertools.count()  # the ``<n>`` of the file names: distinct in one process


def event_file_name(seconds: float, host: str, pid: int, number: int) -> str:
  """TensorFlow's name for an event file, e.g. ``events.out.tfevents.1700000000.vm.42.0.v2``."""
  return f"{EVENTS_PREFIX}.{int(seconds):010d}.{host}.{pid}.{number}.v2"


def scalar_summary_metadata() -> summary_pb2.SummaryMetadata:
  """The ``SummaryMetadata`` of a scalar: the ``scalars`` plugin, ``DATA_CLASS_SCALAR``."""
  meta = scalar_metadata.create_summary_metadata(display_name="", description="")
  meta.data_class = summary_pb2.DATA_CLASS_SCALAR
  return meta


def scalar_value(tag: str, value: float) -> summary_pb2.Summary.Value:
  """``value`` as a ``Summary.Value`` named ``tag``: a ``DT_FLOAT`` scalar tensor, as
  ``tf.summary.scalar`` writes it (float32: its precision in TensorBoard too)."""
  tensor = tensor_pb2.TensorProto(
    dtype=types_pb2.DT_FLOAT,
    tensor_shape=tensor_shape_pb2.TensorShapeProto(),
    tensor_content=np.asarray(value, dtype="<f4").tobytes(),
  )
  return summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=scalar_summary_metadata())


def scalars_event(step: int, scalars: Mapping[str, float], wall_time: float) -> event_pb2.Event:
  """One ``Event`` at ``step`` holding every scalar of ``scalars`` (tag -> value)."""
  values = [scalar_value(tag, float(v)) for tag, v in scalars.items()]
  return event_pb2.Event(
    wall_time=wall_time, step=int(step), summary=summary_pb2.Summary(value=values)
  )


def version_event(wall_time: float) -> event_pb2.Event:
  """The first record of every event file: its format version, ``brain.Event:2``."""
  return event_pb2.Event(
    wall_time=wall_time,
    file_version="brain.Event:2",
    source_metadata=event_pb2.SourceMetadata(writer="jitr.training.tensorboard_writer"),
  )


class TensorBoardWriter:
  """Scalars to a new event file in ``logdir`` (created, with its parents, if missing).

  ``write_scalars(step, {tag: value})`` appends one event, :meth:`flush` makes the events
  so far reach the file, :meth:`close` flushes and closes it (once; later calls do
  nothing). Usable as a context manager.
  """

  def __init__(self, logdir: str | os.PathLike):
    paths.makedirs(logdir)
    self.path = os.path.join(
      os.fspath(logdir),
      event_file_name(time.time(), socket.gethostname(), os.getpid(), next(_file_numbers)),
    )
    self._file = paths.open(self.path, "wb")  # closed by close()
    self._records = RecordWriter(self._file)
    self._records.write(version_event(time.time()).SerializeToString())
    self.flush()

  def write_scalars(self, step: int, scalars: Mapping[str, float]) -> None:
    """Appends the scalars ``{tag: value}`` at ``step`` (nothing when there are none)."""
    if scalars:
      self._records.write(scalars_event(step, scalars, time.time()).SerializeToString())

  def flush(self) -> None:
    """Hands the events written so far to the operating system."""
    if not self._file.closed:
      self._file.flush()

  def close(self) -> None:
    """Flushes and closes the file."""
    if not self._file.closed:
      self._file.flush()
      self._file.close()

  def __enter__(self) -> TensorBoardWriter:
    return self

  def __exit__(self, *exc_info: object) -> None:
    self.close()
