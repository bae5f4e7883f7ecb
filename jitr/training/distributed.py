"""Multi-host ("pod") setup: ``jax.distributed`` initialisation and per-host input sharding.

A multi-host run starts the same program once per host (process). Each process
calls :func:`initialize` before any other JAX call, then sees every device of
the job in ``jax.devices()`` and its own in ``jax.local_devices()``. Each
process reads only its rows of every global batch (:func:`process_batch_slice`)
and ``DataParallel.put_batch`` assembles the global batch from those rows, so
the step computes exactly what one process with all the devices would.

Usage (process ``p`` of ``n``; process 0's host serves as coordinator)::

  from jitr.training import distributed
  distributed.initialize("10.0.0.1:1234", num_processes=n, process_id=p)
  rows = distributed.process_batch_slice(global_batch_size)
  ...
  state, metrics = dp(state, dp.put_batch({k: v[rows] for k, v in global_batch.items()}))

On CPU hosts (and in the localhost stand-in test) the cross-process
collectives go through Gloo over TCP (``jax_cpu_collectives_implementation``).
"""

from __future__ import annotations

import contextlib
import os
import platform

import jax

CPU_COLLECTIVES = ("gloo", "mpi")


def cpu_collectives_available(implementation: str = "gloo") -> bool:
  """Whether this host can run cross-process collectives on CPU with ``implementation``.

  Public APIs cannot ask jaxlib which collectives it was built with, so this
  follows jaxlib's packaging: Gloo is built into the Linux and macOS wheels
  (JAX >= 0.4.27); MPI additionally needs MPItrampoline's ``MPITRAMPOLINE_LIB``.
  """
  if implementation not in CPU_COLLECTIVES:
    raise ValueError(f"implementation: expected one of {CPU_COLLECTIVES}, got {implementation!r}")
  if platform.system() not in ("Linux", "Darwin"):
    return False
  return implementation == "gloo" or bool(os.environ.get("MPITRAMPOLINE_LIB"))


def _check_int(name: str, value, minimum: int) -> None:
  if isinstance(value, bool) or not isinstance(value, int):
    raise TypeError(f"{name}: expected an int, got {value!r} ({type(value).__name__})")
  if value < minimum:
    raise ValueError(f"{name}: expected an int >= {minimum}, got {value}")


def initialize(
  coordinator_address: str | None = None,
  num_processes: int = 1,
  process_id: int = 0,
  *,
  local_device_count: int | None = None,
  cpu_collectives: str | None = "gloo",
  initialization_timeout_s: int = 300,
) -> None:
  """Joins this process to a multi-process JAX job; a no-op for ``num_processes == 1``.

  With ``num_processes > 1`` (or ``local_device_count`` set) it must run
  before any other JAX call (anything that touches a device).

  Args:
    coordinator_address: ``"host:port"`` of process 0, where the coordination
      service listens; every process passes the same one. Required when
      ``num_processes > 1``.
    num_processes: processes (hosts) in the job.
    process_id: this process's index in ``[0, num_processes)``.
    local_device_count: if set, the number of CPU devices this process exposes
      (``jax_num_cpu_devices``; overrides ``--xla_force_host_platform_device_count``).
      For CPU runs and tests; accelerators expose their real devices.
    cpu_collectives: the cross-process collective implementation for CPU
      devices, ``"gloo"`` (default) or ``"mpi"``; ``None`` keeps JAX's setting.
      It only affects the CPU backend, so it is harmless on GPU/TPU hosts.
    initialization_timeout_s: how long to wait for every process to connect.

  Raises:
    TypeError / ValueError: bad arguments.
    RuntimeError: JAX's backend is already initialised (a JAX call ran first),
      ``jax.distributed`` is already initialised, or the requested CPU
      collectives are missing from this jaxlib build.
  """
  _check_int("num_processes", num_processes, 1)
  _check_int("process_id", process_id, 0)
  if process_id >= num_processes:
    raise ValueError(
      f"process_id: expected 0 <= process_id < num_processes={num_processes}, got {process_id}"
    )
  if local_device_count is not None:
    _check_int("local_device_count", local_device_count, 1)
  _check_int("initialization_timeout_s", initialization_timeout_s, 1)
  if cpu_collectives is not None and cpu_collectives not in CPU_COLLECTIVES:
    raise ValueError(
      f"cpu_collectives: expected one of {CPU_COLLECTIVES} or None, got {cpu_collectives!r}"
    )
  if num_processes > 1:
    if not coordinator_address or not isinstance(coordinator_address, str):
      raise ValueError(
        f"coordinator_address: a 'host:port' string is required for num_processes={num_processes}, "
        f"got {coordinator_address!r}"
      )
    host, sep, port = coordinator_address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
      raise ValueError(
        f"coordinator_address: expected 'host:port' with a port in [1, 65535], "
        f"got {coordinator_address!r}"
      )

  if num_processes == 1 and local_device_count is None:
    return  # nothing to set up: a single process sees its devices as they are
  if local_device_count is not None:
    with _refused_after_backend_start():
      jax.config.update("jax_num_cpu_devices", local_device_count)
  if num_processes == 1:
    return
  if jax.distributed.is_initialized():
    raise RuntimeError("jax.distributed is already initialised in this process")
  if cpu_collectives is not None:
    if not cpu_collectives_available(cpu_collectives):
      raise RuntimeError(f"this jaxlib build has no {cpu_collectives!r} CPU collectives")
    jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
  with _refused_after_backend_start():
    jax.distributed.initialize(
      coordinator_address=coordinator_address,
      num_processes=num_processes,
      process_id=process_id,
      initialization_timeout=initialization_timeout_s,
    )


@contextlib.contextmanager
def _refused_after_backend_start():
  """Turns JAX's "the backend is already initialised" RuntimeError into one clear message."""
  try:
    yield
  except RuntimeError as error:
    if "before" not in str(error):
      raise
    raise RuntimeError(
      "distributed.initialize must run before any other JAX call (the backend is already "
      "initialised, e.g. by jax.devices() or a computation)"
    ) from error


def process_batch_slice(
  global_batch_size: int, *, process_id: int | None = None, num_processes: int | None = None
) -> slice:
  """This process's rows ``[p·b, (p+1)·b)`` of a global batch, ``b = global_batch_size / P``.

  Matches ``DataParallel``'s mesh, which orders devices by process, so the rows
  a process passes to ``put_batch`` land on its own devices. ``process_id`` and
  ``num_processes`` default to ``jax.process_index()`` / ``jax.process_count()``.
  """
  _check_int("global_batch_size", global_batch_size, 1)
  num_processes = jax.process_count() if num_processes is None else num_processes
  process_id = jax.process_index() if process_id is None else process_id
  _check_int("num_processes", num_processes, 1)
  _check_int("process_id", process_id, 0)
  if process_id >= num_processes:
    raise ValueError(
      f"process_id: expected 0 <= process_id < num_processes={num_processes}, got {process_id}"
    )
  if global_batch_size % num_processes:
    raise ValueError(
      f"global_batch_size: {global_batch_size} rows do not split over {num_processes} processes; "
      f"use a multiple of {num_processes}"
    )
  rows = global_batch_size // num_processes
  return slice(process_id * rows, (process_id + 1) * rows)
