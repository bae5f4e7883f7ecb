"""The job an app runs in: joining it (:func:`join_configured_job`), and a process of a
multi-process job whose collective failed ended at once with one line
(:func:`ending_on_a_lost_process`)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any


def join_configured_job(settings: Any = None):
  """:func:`jitr.training.distributed.join_job` with a run config's ``distributed`` group
  (configs/default.py: unset values ``""`` / ``0`` / ``-1`` join the job JAX detects, or
  run a single process); ``None`` (an app without a run config): the job JAX detects."""
  from jitr.training import distributed  # JAX loads only when an app runs

  if settings is None:
    return distributed.join_job()
  return distributed.join_job(
    settings["coordinator_address"],
    settings["num_processes"],
    settings["process_id"],
    heartbeat_timeout_s=settings["heartbeat_timeout_s"],
  )


def exit_lost_process(name: str, error: BaseException) -> None:
  """Ends a process of a multi-process job whose collective failed (another process died or
  was killed): one line ``NAME: error: ...`` and exit status 1 at once, without JAX's
  shutdown barrier, which would wait for the lost process and then abort."""
  first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
  sys.stderr.write(
    f"{name}: error: a collective with the other processes of the job failed ({first}); "
    "another process probably stopped: see its log\n"
  )
  sys.stderr.flush()
  sys.stdout.flush()
  os._exit(1)


@contextlib.contextmanager
def ending_on_a_lost_process(name: str, process_count: int) -> Iterator[None]:
  """Runs the block; a failed collective (``jax.errors.JaxRuntimeError``) in a job of
  several processes ends this one with :func:`exit_lost_process`. In a single process the
  error goes on as raised."""
  import jax  # here, not at the top: the apps' --help answers without loading JAX

  try:
    yield
  except jax.errors.JaxRuntimeError as error:
    if process_count == 1:
      raise
    exit_lost_process(name, error)
