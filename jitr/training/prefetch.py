"""Input batches prepared ahead of the train step: host batches in a background
thread, device transfers started ``size`` batches early (double-buffered)."""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
_DONE = object()


class _Raised:
  """An exception of the producer thread, carried to the consumer."""

  def __init__(self, error: BaseException):
    self.error = error


def _produce(batches: Iterable[Any], out: queue.Queue, stop: threading.Event) -> None:
  """Puts every item of ``batches`` (then ``_DONE``, or the error) into ``out``
  until ``stop`` is set."""

  def put(item: Any) -> bool:
    while not stop.is_set():
      try:
        out.put(item, timeout=0.1)
        return True
      except queue.Full:
        continue
    return False

  try:
    for batch in batches:
      if not put(batch):
        return
  except BaseException as error:  # noqa: BLE001 - re-raised in the consumer
    put(_Raised(error))
    return
  put(_DONE)


def background_iterator(batches: Iterable[T], *, size: int = 2) -> Iterator[T]:
  """The items of ``batches`` in order, produced by a daemon thread that keeps up
  to ``size`` items ready; an error raised while producing is raised here.

  Closing the iterator early (``break``, ``islice``, garbage collection) stops
  the thread.
  """
  if size < 1:
    raise ValueError(f"size: expected >= 1 batches to prepare ahead, got {size}")
  ready: queue.Queue = queue.Queue(maxsize=size)
  stop = threading.Event()
  thread = threading.Thread(
    target=_produce, args=(batches, ready, stop), name="jitr-host-batches", daemon=True
  )
  thread.start()
  try:
    while True:
      item = ready.get()
      if item is _DONE:
        return
      if isinstance(item, _Raised):
        raise item.error
      yield item
  finally:
    stop.set()
    thread.join()


def prefetch_to_device(
  batches: Iterable[Any], *, size: int = 2, put: Callable[[Any], Any] = lambda batch: batch
) -> Iterator[Any]:
  """``put(batch)`` for every host batch, in order, ``size`` batches put ahead.

  When batch ``t`` is yielded, ``put`` has been called on batches ``t .. t + size - 1``.
  Host batches come from :func:`background_iterator` (a thread building the
  next ones while the step runs); ``put`` (e.g. ``DataParallel.put_batch`` or
  ``jax.device_put``) starts each transfer asynchronously, so with ``size=2``
  batch ``t + 1`` is on its way to the devices while step ``t`` computes (as
  ``flax.jax_utils.prefetch_to_device``).
  """
  host = background_iterator(batches, size=size)
  on_device: collections.deque = collections.deque()
  error: Exception | None = None
  try:
    while True:
      try:
        batch = next(host)
      except StopIteration:
        break
      except Exception as raised:  # the batches before it are handed out first
        error = raised
        break
      on_device.append(put(batch))
      if len(on_device) >= size:
        yield on_device.popleft()
    while on_device:
      yield on_device.popleft()
    if error is not None:
      raise error
  finally:
    host.close()
