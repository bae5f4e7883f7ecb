"""The job a cluster started this process in, as JAX's own cluster detection reads it.

``jax.distributed.initialize()`` with no arguments asks each of JAX's cluster
environments (Cloud TPU pod slices on GCE and GKE, SLURM, Open MPI, Kubernetes) whether
it started this process, and takes the coordinator address, process count and index
from the first that did. :func:`detected_job` runs that same detection *without*
joining, so a caller can decide first: a job of one process stays a plain single
process, and a config that disagrees with the job is refused before anything connects.

It reads ``jax._src.clusters`` (the code ``jax.distributed.initialize`` calls), imported
when a run asks: jitr's ``train`` extra bounds ``jax < 0.11``, the versions this module is
tested with (the core, the functional losses, uses public JAX only and has no bound). On a
JAX whose private module lacks what is read here, :func:`detected_job` raises one
``ValueError`` line saying so and what to do.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import jax


@dataclasses.dataclass(frozen=True)
class DetectedJob:
  """A multi-process job a cluster environment started.

  Attributes:
    environment: the detecting environment's name (``"SlurmCluster"``, ``"OmpiCluster"``,
      ``"GceTpuCluster"``, ...).
    coordinator_address: ``"host:port"`` of the coordination service (process 0's host).
    num_processes: processes in the job.
    process_id: this process's index in ``[0, num_processes)``.
    local_device_ids: the devices this process should see (SLURM and Open MPI on GPUs:
      one per process), or ``None`` for all of them.
  """

  environment: str
  coordinator_address: str
  num_processes: int
  process_id: int
  local_device_ids: Sequence[int] | None = None


def cluster_env():
  """``jax._src.clusters.ClusterEnv``, the base of JAX's cluster environments, with what
  :func:`detected_job` reads of it (``_cluster_types``, ``auto_detect_unset_distributed_params``).

  Raises:
    ValueError: one line, when this JAX has no such module or class (a JAX newer than the
      ``train`` extra's bound): its version and the two ways on.
  """
  try:
    from jax._src import clusters  # JAX's detection (see the module docstring)

    env = clusters.ClusterEnv
    env._cluster_types, env.auto_detect_unset_distributed_params  # noqa: B018
  except (ImportError, AttributeError) as err:
    raise ValueError(
      f"cluster detection: JAX {jax.__version__} lacks what jitr reads of jax._src.clusters "
      f"({type(err).__name__}: {err}); install the JAX jitr's train extra allows "
      "(pip install 'jitr[train]': jax<0.11), or set config.distributed.coordinator_address, "
      "num_processes and process_id and start each process yourself"
    ) from None
  return env


def detected_job(initialization_timeout_s: int = 300) -> DetectedJob | None:
  """The job JAX's cluster detection finds for this process, or ``None`` when no cluster
  environment started it (a plain machine). ``JAX_COORDINATOR_ADDRESS`` and
  ``JAX_COORDINATOR_PORT`` override the detected address, as in JAX. A ``ValueError`` (one
  line) on a JAX without the detection this reads (:func:`cluster_env`)."""
  base = cluster_env()
  env = next(
    (e for e in base._cluster_types if not e.opt_in_only_method and e.is_env_present()),
    None,
  )
  if env is None:
    return None
  address, count, index, local_ids = base.auto_detect_unset_distributed_params(
    os.environ.get("JAX_COORDINATOR_ADDRESS"), None, None, None, None, initialization_timeout_s
  )
  return DetectedJob(env.__name__, address, int(count), int(index), local_ids)


def worker_share(num_workers: int | None, worker_index: int | None) -> tuple[int, int]:
  """``(num_workers, worker_index)`` of a job whose workers share no computation (each
  writes its own part, as ``jitr-precompute``'s): the given values when either is given
  (1 and 0 for the one left out), else the process count and index of the job
  :func:`detected_job` finds (1 and 0 without one). The workers do not connect."""
  if num_workers is not None or worker_index is not None:
    return (1 if num_workers is None else num_workers, 0 if worker_index is None else worker_index)
  job = detected_job()
  return (1, 0) if job is None else (job.num_processes, job.process_id)
