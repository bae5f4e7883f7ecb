"""Joining the job a cluster started (``distributed.join_job``, ``cluster.detected_job``) and
the processes' one stop decision (``agreed_stop``), without starting a second process
(tests/apps/test_pod_launch.py runs the apps as a two-process SLURM step)."""

from __future__ import annotations

import signal
import sys

import jax
import numpy as np
import pytest

from jitr.training import agreed_stop, cluster, distributed
from jitr.training.cluster import DetectedJob
from jitr.training.loop import StopRequested

SLURM_STEP = {
  "SLURM_JOB_ID": "4711",
  "SLURM_STEP_NODELIST": "node[007-009],gpu1",
  "SLURM_NTASKS": "3",
  "SLURM_PROCID": "2",
  "SLURM_LOCALID": "0",
}
SLURM_JOB = DetectedJob("SlurmCluster", "node007:62055", 3, 2, [0])


@pytest.fixture
def no_cluster(monkeypatch):
  for name in [*SLURM_STEP, "OMPI_MCA_orte_hnp_uri", "PMIX_RANK", "JAX_COORDINATOR_ADDRESS"]:
    monkeypatch.delenv(name, raising=False)
  monkeypatch.delenv("JAX_COORDINATOR_PORT", raising=False)


def test_a_plain_machine_has_no_job(no_cluster):
  assert cluster.detected_job() is None


def test_a_slurm_step_is_read_as_jax_reads_it(no_cluster, monkeypatch):
  for name, value in SLURM_STEP.items():
    monkeypatch.setenv(name, value)
  # JAX's SLURM port: 65535 - 4095 + job id % 4096; the first node of the step's list
  assert cluster.detected_job() == SLURM_JOB
  monkeypatch.setenv("JAX_COORDINATOR_PORT", "1234")
  assert cluster.detected_job().coordinator_address == "node007:1234"


def test_a_worker_share_is_the_flags_or_the_detected_job(no_cluster, monkeypatch):
  """``jitr-precompute``'s ``(num_workers, worker_index)``: the given values (1 and 0 for
  the one left out), else the detected job's process count and index, else one worker."""
  assert cluster.worker_share(4, 3) == (4, 3)
  assert cluster.worker_share(4, None) == (4, 0)
  assert cluster.worker_share(None, 2) == (1, 2)
  assert cluster.worker_share(None, None) == (1, 0)
  for name, value in SLURM_STEP.items():
    monkeypatch.setenv(name, value)
  assert cluster.worker_share(None, None) == (3, 2)
  assert cluster.worker_share(2, None) == (2, 0)


@pytest.fixture
def joins(monkeypatch):
  """The ``initialize`` calls ``join_job`` makes (none reaches JAX)."""
  calls = []
  monkeypatch.setattr(distributed, "initialize", lambda *a, **k: calls.append((a, k)))
  return calls


def test_no_cluster_and_no_settings_stays_one_process_without_connecting(joins):
  assert distributed.join_job(detect=lambda: None) == distributed.Job(0, 1, None)
  assert [args for args, _ in joins] == [(None, 1, 0)]  # initialize(n=1) connects nothing


def test_a_detected_job_is_joined_with_its_address_and_devices(joins):
  distributed.join_job(heartbeat_timeout_s=7, detect=lambda: SLURM_JOB)
  ((args, kwargs),) = joins
  assert args == ("node007:62055", 3, 2)
  assert kwargs["local_device_ids"] == [0] and kwargs["heartbeat_timeout_s"] == 7
  joins.clear()
  distributed.join_job("10.0.0.1:99", 3, 2, detect=lambda: SLURM_JOB)  # a given address wins
  assert joins[0][0] == ("10.0.0.1:99", 3, 2)


def test_a_job_of_one_process_stays_a_single_process(joins):
  one = DetectedJob("SlurmCluster", "node007:62055", 1, 0, [0])
  assert distributed.join_job(detect=lambda: one) == distributed.Job(0, 1, "SlurmCluster")
  assert joins[0][0] == ("node007:62055", 1, 0) and joins[0][1]["local_device_ids"] is None


@pytest.mark.parametrize(
  ("settings", "message"),
  [
    (
      {"num_processes": 1},
      "num_processes: 1 given, but SlurmCluster started this command as process 2 of 3; "
      "leave num_processes unset (0) to join that job as JAX detects it",
    ),
    (
      {"process_id": 0},
      "process_id: 0 given, but SlurmCluster started this command as process 2 of 3; "
      "leave process_id unset (-1) to join that job as JAX detects it",
    ),
  ],
)
def test_settings_that_disagree_with_the_detected_job_are_refused(joins, settings, message):
  with pytest.raises(ValueError) as err:
    distributed.join_job(**settings, detect=lambda: SLURM_JOB)
  assert str(err.value) == message
  assert joins == []


def test_explicit_settings_outside_a_cluster(joins):
  distributed.join_job("10.0.0.1:99", 2, 1, detect=lambda: None)
  assert joins[0][0] == ("10.0.0.1:99", 2, 1)
  with pytest.raises(ValueError, match=r"^process_id: required for num_processes=2 outside"):
    distributed.join_job("10.0.0.1:99", 2, detect=lambda: None)
  with pytest.raises(ValueError, match=r"^num_processes: expected an int >= 0, got -1$"):
    distributed.join_job(num_processes=-1, detect=lambda: None)


@pytest.mark.parametrize(
  ("signals", "expected"),
  [([0, 0], None), ([0, 2], 2), ([2, 15], 15), ([15, 0, 2], 15)],
)
def test_the_job_stops_for_sigterm_if_any_process_got_one(signals, expected):
  assert agreed_stop.agreed_signal(np.array(signals)) == expected


def test_every_process_stops_at_the_same_agreement_step():
  local = StopRequested()  # this process got no signal; process 1 got SIGTERM
  gathered = []

  def gather(value):
    gathered.append(int(value))
    return np.array([int(value), signal.SIGTERM])

  stop = agreed_stop.AgreedStop(local, every_steps=3, gather=gather, process_count=2)
  assert [stop() for _ in range(3)] == [False, False, True]
  assert gathered == [0] and stop.signal_number == signal.SIGTERM
  assert stop() and gathered == [0]  # decided once: no more gathers


def test_a_single_process_stops_at_its_own_signal_at_once():
  local = StopRequested()
  stop = agreed_stop.AgreedStop(local, every_steps=10, gather=None, process_count=1)
  assert not stop()
  local.request(signal.SIGINT)
  assert stop() and stop.signal_number == signal.SIGINT


def test_every_steps_must_be_a_positive_int():
  with pytest.raises(ValueError, match=r"^every_steps: expected a positive int, got 0$"):
    agreed_stop.AgreedStop(StopRequested(), every_steps=0, process_count=1)


def test_a_jax_without_the_private_cluster_detection_is_one_clear_line(monkeypatch):
  import types

  changed = types.ModuleType("jax._src.clusters")  # a JAX whose private module changed
  monkeypatch.setitem(sys.modules, "jax._src.clusters", changed)
  monkeypatch.setattr(jax._src, "clusters", changed, raising=False)
  with pytest.raises(ValueError) as caught:
    cluster.detected_job()
  message = str(caught.value)
  assert "\n" not in message
  assert message.startswith(f"cluster detection: JAX {jax.__version__} lacks what jitr reads")
  assert "AttributeError" in message and "jax<0.11" in message
  assert "config.distributed.coordinator_address" in message
