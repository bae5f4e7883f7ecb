"""The pod stand-in: two localhost processes x 4 CPU devices train like one process x 8 devices.

Two subprocesses (``tests/training/multiprocess_worker.py``) join one JAX job
through ``jitr.training.distributed.initialize`` (coordinator on a free
localhost port, Gloo CPU collectives), each feeding only its half of every
global batch; process 0 saves the final parameters. Both backends (shard_map,
then pmap) train in the same job, one after the other, so the processes start
and join once. The same steps then run here on one device with the full global
batch, and the parameters and losses must agree.
"""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from jitr import training
from jitr.training import distributed
from tests.training import multiprocess_worker as worker
from tests.training import tiny

ROOT = Path(__file__).resolve().parents[2]
NUM_PROCESSES = 2
LOCAL_DEVICES = 4
TIMEOUT_S = 300  # the whole two-process run, including start-up and compilation on a busy machine


def one_step():
  return training.make_train_step(
    tiny.EVERY_LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_inputs_fn
  )


def _free_port() -> int:
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _worker_env() -> dict[str, str]:
  env = {
    k: v for k, v in os.environ.items() if "proxy" not in k.lower()
  }  # gRPC would route localhost via a proxy
  env["XLA_FLAGS"] = " ".join(
    [
      f
      for f in env.get("XLA_FLAGS", "").split()
      if not f.startswith("--xla_force_host_platform_device_count")
    ]
    + [f"--xla_force_host_platform_device_count={LOCAL_DEVICES}"]
  )
  env["JAX_PLATFORMS"] = "cpu"
  env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
  return env


def _run_workers(out: Path, backends: tuple[str, ...], meanwhile=lambda: None):
  """Starts the processes, runs ``meanwhile()`` here while they start up and train,
  waits for all of them (killing every one on failure or timeout) and returns what
  ``meanwhile()`` returned."""
  coordinator = f"127.0.0.1:{_free_port()}"
  procs, logs = [], []
  try:
    for pid in range(NUM_PROCESSES):
      log = open(out / f"process{pid}.log", "wb")
      logs.append(log)
      procs.append(
        subprocess.Popen(
          [
            sys.executable,
            "-m",
            "tests.training.multiprocess_worker",
            "--coordinator",
            coordinator,
            "--num-processes",
            str(NUM_PROCESSES),
            "--process-id",
            str(pid),
            "--local-devices",
            str(LOCAL_DEVICES),
            "--steps",
            str(worker.STEPS),
            "--out",
            str(out),
            "--backends",
            ",".join(backends),
          ],
          cwd=ROOT,
          env=_worker_env(),
          stdout=log,
          stderr=subprocess.STDOUT,
        )
      )
    deadline = time.monotonic() + TIMEOUT_S
    result = meanwhile()
    while any(p.poll() is None for p in procs):
      # One process failing leaves the others waiting on collectives: stop at the first failure.
      if any(p.returncode not in (None, 0) for p in procs) or time.monotonic() > deadline:
        break
      time.sleep(0.2)
  finally:
    timed_out = any(p.poll() is None for p in procs)
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.wait(timeout=30)
    for log in logs:
      log.close()
  codes = [p.returncode for p in procs]
  if timed_out or any(codes):
    tails = "\n".join(
      f"--- process {pid} (exit {code}) ---\n"
      + (out / f"process{pid}.log").read_text(errors="replace")[-3000:]
      for pid, code in enumerate(codes)
    )
    timeout = f"timed out after {TIMEOUT_S} s; " if timed_out else ""
    pytest.fail(f"{timeout}worker exit codes {codes}\n{tails}")
  return result


@pytest.mark.slow
# jitr-train's pod test (tests/apps/test_pod_launch.py) checks two processes against one
# through the console script; this library-level run, both backends, on request
@pytest.mark.full
def test_two_processes_train_like_one_process_with_eight_devices(tmp_path):
  if not distributed.cpu_collectives_available("gloo"):
    pytest.skip(
      "this jaxlib build has no Gloo CPU collectives, so CPU processes cannot form one JAX job"
    )
  assert jax.device_count() == NUM_PROCESSES * LOCAL_DEVICES, (
    "tests/conftest.py asks XLA for 8 host devices"
  )

  def reference():
    """The plain single-device step (no split at all) on the full global batches: the
    reference of both backends (that 8 devices in one process equal it is test_split.py's).
    Computed here while the workers start up and train."""
    one = training.DataParallel(one_step(), devices=jax.devices()[:1])
    return (
      *worker.train(one, worker.global_batches(), slice(None)),
      worker.train(one, [], slice(None))[0],
    )

  one_params, one_losses, initial = _run_workers(tmp_path, worker.BACKENDS, reference)
  # The run really trained: parameters moved from the initial state.
  assert any(np.abs(one_params[k] - initial[k]).max() > 1e-3 for k in one_params)
  assert len(one_losses) == worker.STEPS and np.all(np.isfinite(one_losses))
  for backend in worker.BACKENDS:
    result = np.load(tmp_path / worker.result_name(backend))
    np.testing.assert_allclose(result["losses"], one_losses, rtol=1e-5, atol=1e-5, err_msg=backend)
    saved = {k.removeprefix("params/"): result[k] for k in result.files if k.startswith("params/")}
    assert saved.keys() == one_params.keys()
    for name, value in one_params.items():
      np.testing.assert_allclose(saved[name], value, rtol=0, atol=1e-5, err_msg=name)


def test_process_batch_slice_gives_each_process_its_rows():
  assert distributed.process_batch_slice(16, process_id=0, num_processes=2) == slice(0, 8)
  assert distributed.process_batch_slice(16, process_id=1, num_processes=2) == slice(8, 16)
  assert distributed.process_batch_slice(16) == slice(0, 16)  # the single pytest process
  rows = np.arange(12)
  parts = [
    rows[distributed.process_batch_slice(12, process_id=p, num_processes=3)] for p in range(3)
  ]
  np.testing.assert_array_equal(np.concatenate(parts), rows)
  with pytest.raises(ValueError, match="do not split over 3 processes"):
    distributed.process_batch_slice(16, process_id=0, num_processes=3)
  with pytest.raises(ValueError, match="process_id"):
    distributed.process_batch_slice(16, process_id=2, num_processes=2)


@pytest.mark.parametrize(
  "kwargs, error, match",
  [
    (dict(num_processes=0), ValueError, "num_processes"),
    (dict(num_processes=2.0), TypeError, "num_processes"),
    (
      dict(num_processes=2, process_id=2, coordinator_address="127.0.0.1:1234"),
      ValueError,
      "process_id",
    ),
    (dict(num_processes=2, process_id=0), ValueError, "coordinator_address"),
    (dict(num_processes=2, process_id=0, coordinator_address="localhost"), ValueError, "host:port"),
    (
      dict(num_processes=2, process_id=0, coordinator_address="localhost:99999"),
      ValueError,
      "host:port",
    ),
    (dict(local_device_count=0), ValueError, "local_device_count"),
    (
      dict(num_processes=2, coordinator_address="127.0.0.1:1234", cpu_collectives="nccl"),
      ValueError,
      "cpu_collectives",
    ),
  ],
)
def test_initialize_refuses_bad_arguments(kwargs, error, match):
  with pytest.raises(error, match=match):
    distributed.initialize(**kwargs)


def test_initialize_after_jax_has_started_is_refused():
  jax.devices()  # the backend is up in the pytest process
  distributed.initialize()  # a single process needs no set-up, so it is fine at any time
  with pytest.raises(RuntimeError, match="before any other JAX call"):
    distributed.initialize(local_device_count=4)
  with pytest.raises(RuntimeError, match="before any other JAX call"):
    distributed.initialize("127.0.0.1:1234", num_processes=2, process_id=0)
