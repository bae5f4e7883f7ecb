"""prefetch_to_device: same batches in order, put ahead, errors raised, the thread stops."""

import itertools
import threading

import jax
import numpy as np
import pytest

from jitr.training.prefetch import background_iterator, prefetch_to_device


def _batches(n):
  return ({"x": np.full((2, 3), i, np.float32), "i": np.array([i, i])} for i in range(n))


def _prefetch_threads():
  return [t for t in threading.enumerate() if t.name == "jitr-host-batches"]


@pytest.mark.parametrize("size", [1, 2, 3])
def test_yields_the_same_batches_in_order_on_device(size):
  out = list(prefetch_to_device(_batches(7), size=size, put=jax.device_put))
  assert len(out) == 7
  for i, (got, want) in enumerate(zip(out, _batches(7))):
    assert isinstance(got["x"], jax.Array)
    np.testing.assert_array_equal(np.asarray(got["x"]), want["x"], err_msg=str(i))
    np.testing.assert_array_equal(np.asarray(got["i"]), want["i"])


def test_next_batches_are_put_before_the_current_one_is_used():
  put_calls = []
  seen = []

  def put(batch):
    put_calls.append(int(batch["i"][0]))
    return batch

  for batch in prefetch_to_device(_batches(5), size=2, put=put):
    i = int(batch["i"][0])
    seen.append((i, list(put_calls)))
  assert [i for i, _ in seen] == [0, 1, 2, 3, 4]
  # when batch t is handed out, batch t + 1 is already on its way (double buffering)
  assert [calls for _, calls in seen] == [[0, 1], [0, 1, 2], [0, 1, 2, 3], [0, 1, 2, 3, 4]] + [
    [0, 1, 2, 3, 4]
  ]


def test_an_error_while_producing_is_raised_after_the_good_batches():
  def broken():
    yield from _batches(3)
    raise OSError("record 3 is corrupt")

  got = []
  with pytest.raises(OSError, match="record 3 is corrupt"):
    for batch in prefetch_to_device(broken(), size=2):
      got.append(int(batch["i"][0]))
  assert got == [0, 1, 2]
  assert not _prefetch_threads()


def test_an_error_in_put_is_raised():
  def put(batch):
    if batch["i"][0] == 2:
      raise ValueError("batch['x']: rows do not split")
    return batch

  with pytest.raises(ValueError, match="rows do not split"):
    list(prefetch_to_device(_batches(5), size=2, put=put))
  assert not _prefetch_threads()


def test_stopping_early_stops_the_producer_thread():
  endless = ({"i": np.array([i])} for i in itertools.count())
  it = prefetch_to_device(endless, size=2)
  assert [int(b["i"][0]) for b in itertools.islice(it, 4)] == [0, 1, 2, 3]
  assert len(_prefetch_threads()) == 1
  it.close()
  assert not _prefetch_threads()


def test_background_iterator_runs_the_producer_in_another_thread():
  names = []

  def producer():
    for i in range(3):
      names.append(threading.current_thread().name)
      yield i

  assert list(background_iterator(producer(), size=1)) == [0, 1, 2]
  assert names == ["jitr-host-batches"] * 3
  with pytest.raises(ValueError, match="size: expected >= 1"):
    next(background_iterator(iter([]), size=0))
