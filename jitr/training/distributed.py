"""Multi-host ("pod") setup: ``jax.distributed`` initialisation and per-host input sharding.

A multi-host run starts the same program once per host (process). Each process
calls :func:`join_job` (or :func:`initialize` with explicit settings) before any other
JAX call -- with no settings it joins the job its cluster (a Cloud TPU pod slice, SLURM,
Open MPI, Kubernetes) started, so one command runs everywhere -- then sees every device of
the job in ``jax.devices()`` and its own in ``jax.local_devices()``. Each
process reads only its rows of every global batch (:func:`process_batch_slice`)
and ``DataParallel.put_batch`` assembles the global batch from those rows, so
the step computes exactly what one process with all the devices would.

Usage (process ``p`` of ``n``; process 0's host serves as coordinator)::

  from jitr.training import distributed
  distributed.join_job()  # or join_job("10.0.0.1:1234", num_processes=n, process_id=p)
  rows = distributed.process_batch_slice(global_batch_size)
  ...
  state, metrics = dp(state, dp.put_batch({k: v[rows] for k, v in global_batch.items()}))

On CPU hosts (and in the localhost stand-in test) the cross-process
collectives go through Gloo over TCP (``jax_cpu_collectives_implementation``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
from collections.abc import Callable, Sequence

import jax
from jax.experimental import multihost_utils

from jitr.training.cluster import DetectedJob, detected_job

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
  local_device_ids: Sequence[int] | None = None,
  cpu_collectives: str | None = "gloo",
  initialization_timeout_s: int = 300,
  heartbeat_timeout_s: int = 100,
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
    local_device_ids: the accelerator devices this process uses (``None``: all of them);
      cluster detection gives one per process under SLURM and Open MPI on GPUs.
    cpu_collectives: the cross-process collective implementation for CPU
      devices, ``"gloo"`` (default) or ``"mpi"``; ``None`` keeps JAX's setting.
      It only affects the CPU backend, so it is harmless on GPU/TPU hosts.
    initialization_timeout_s: how long to wait for every process to connect.
    heartbeat_timeout_s: how long the coordination service waits for a silent process
      before it declares it dead and stops every process of the job.

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
  _check_int("heartbeat_timeout_s", heartbeat_timeout_s, 1)
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
      local_device_ids=None if local_device_ids is None else list(local_device_ids),
      initialization_timeout=initialization_timeout_s,
      heartbeat_timeout_seconds=heartbeat_timeout_s,
    )


@dataclasses.dataclass(frozen=True)
class Job:
  """The job this process runs in, as JAX reports it after :func:`join_job`.

  Attributes:
    process_index: this process's index in ``[0, process_count)``.
    process_count: processes in the job (1: a single process).
    environment: the cluster environment that started the job (``"SlurmCluster"``, ...),
      ``None`` when none did (a single machine, or settings given explicitly).
  """

  process_index: int
  process_count: int
  environment: str | None = None


def _disagreement(name: str, given: int, job: DetectedJob) -> str:
  return (
    f"{name}: {given} given, but {job.environment} started this command as process "
    f"{job.process_id} of {job.num_processes}; leave {name} unset "
    f"({'0' if name == 'num_processes' else '-1'}) to join that job as JAX detects it"
  )


def join_job(
  coordinator_address: str = "",
  num_processes: int = 0,
  process_id: int = -1,
  *,
  local_device_count: int | None = None,
  cpu_collectives: str | None = "gloo",
  initialization_timeout_s: int = 300,
  heartbeat_timeout_s: int = 100,
  detect: Callable[[], DetectedJob | None] = detected_job,
) -> Job:
  """Joins the job a cluster started this process in, or the one the settings describe.

  With no settings (``coordinator_address=""``, ``num_processes=0``, ``process_id=-1``)
  the job is the one JAX's cluster detection finds (:func:`~jitr.training.cluster.detected_job`:
  Cloud TPU pod slices, SLURM, Open MPI, Kubernetes), so the same command runs on every
  host; without a cluster, or in a job of one process, this stays a single process and
  nothing connects. A given ``coordinator_address`` wins over the detected one; a given
  ``num_processes`` or ``process_id`` must equal the detected job's (a ``ValueError``
  otherwise: a host that ran alone beside its job would race the others on one workdir).
  Outside a cluster, ``num_processes > 1`` needs ``coordinator_address`` and
  ``process_id``. Must run before any other JAX call (see :func:`initialize`).

  Returns:
    the :class:`Job`: its process index and count read back from JAX after joining
    (``Job(0, 1)`` for a single process, without starting JAX's backend).
  """
  _check_int("num_processes", num_processes, 0)
  _check_int("process_id", process_id, -1)
  job = detect()
  if job is not None:
    if num_processes and num_processes != job.num_processes:
      raise ValueError(_disagreement("num_processes", num_processes, job))
    if process_id >= 0 and process_id != job.process_id:
      raise ValueError(_disagreement("process_id", process_id, job))
    count, index = job.num_processes, job.process_id
    address, device_ids = coordinator_address or job.coordinator_address, job.local_device_ids
  else:
    count = num_processes or 1
    if process_id < 0 and count > 1:
      raise ValueError(
        f"process_id: required for num_processes={count} outside a cluster that JAX detects "
        "(SLURM, Open MPI, Cloud TPU, Kubernetes)"
      )
    index, address, device_ids = max(process_id, 0), coordinator_address, None
  initialize(
    address or None,
    count,
    index,
    local_device_count=local_device_count,
    local_device_ids=device_ids if count > 1 else None,
    cpu_collectives=cpu_collectives,
    initialization_timeout_s=initialization_timeout_s,
    heartbeat_timeout_s=heartbeat_timeout_s,
  )
  if count == 1:
    return Job(0, 1, job.environment if job is not None else None)
  return Job(jax.process_index(), jax.process_count(), job.environment if job else None)


def all_processes_reach(name: str) -> None:
  """A barrier across the processes of the job named ``name`` (nothing to wait for with
  one process)."""
  if jax.process_count() > 1:
    multihost_utils.sync_global_devices(name)


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
