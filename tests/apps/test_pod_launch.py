"""Pod launches on one machine: the same command in two processes with a SLURM step's
environment (the variables ``srun`` sets, which JAX's cluster detection reads).

* Two ``jitr-train`` processes x 4 CPU devices train a tiny precomp run, with validation
  and checkpoints, to the parameters of one process x 8 devices (within 1e-6) and the
  same ``metrics.json``; each file of the workdir is written by process 0 alone (a
  ``sitecustomize`` audit hook logs every file each process opens for writing).
* SIGTERM to process 1 only: both stop at the same step, exit 75, and the same command
  resumes to parameters bit-identical to the uninterrupted two-process run.
* kill -9 of one process: the other exits 1 with one line, within seconds.
* Two ``jitr-eval`` processes write the report once; two ``jitr-precompute`` processes
  write the records of one process, byte for byte.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from tests.file_fixtures import write_precomp
from tests.relevance.test_apps import folder_bytes, job_array_captions

pytestmark = pytest.mark.slow

REPO = pathlib.Path(__file__).resolve().parents[2]
TIMEOUT_S = 420  # one whole job: start-up, compilation and training on a busy machine
STEPS = 24  # 40 images x 5 captions / batch 16 = 12 steps per epoch, 2 epochs

CONFIG = """
import pathlib

from tests.file_fixtures import precomp_config


def get_config():
  config = precomp_config(pathlib.Path({data!r}))
  config.data_dir = {cache!r}
  config.num_epochs = 2
  config.log_every_steps = 1
  config.compilation_cache = True  # the later runs reuse the first runs' programs
  config.distributed.stop_check_every_steps = 2
  config.distributed.heartbeat_timeout_s = 10
  return config
"""

# Logs every file a process opens for writing (and every rename's target) to
# $JITR_TEST_WRITES.<SLURM_PROCID>: Python's audit events see each write jitr makes.
SITECUSTOMIZE = """
import os
import sys

_prefix = os.environ.get("JITR_TEST_WRITES")
if _prefix:
  _log = open(f"{_prefix}.{os.environ.get('SLURM_PROCID', 'single')}", "a", buffering=1)
  _WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT

  def _hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
      mode, flags = args[1], args[2]
      if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
        mode is None and isinstance(flags, int) and flags & _WRITE
      ):
        _log.write(os.path.abspath(os.fsdecode(args[0])) + "\\n")
    elif event in ("os.rename", "os.replace"):
      _log.write(os.path.abspath(os.fsdecode(args[1])) + "\\n")

  sys.addaudithook(_hook)
"""


def _slurm_job_id() -> int:
  """A SLURM job id whose coordinator port (JAX: ``61440 + id % 4096``) is free here."""
  for _ in range(200):
    port = random.randint(61440, 65535)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
      try:
        s.bind(("", port))
      except OSError:
        continue
    return 4096 + port - 61440
  raise RuntimeError("no free port in [61440, 65535]")


def _env(root: pathlib.Path, devices: int, slurm: dict[str, str] | None) -> dict[str, str]:
  env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and "SLURM" not in k}
  env["PYTHONPATH"] = os.pathsep.join([str(root / "hook"), str(REPO)])
  env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
  env["XLA_FLAGS"] = " ".join(
    [f for f in env.get("XLA_FLAGS", "").split() if "host_platform_device_count" not in f]
    + [f"--xla_force_host_platform_device_count={devices}"]
  )
  env.update(JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3", JITR_TEST_WRITES=str(root / "writes"))
  env.update(slurm or {})
  return env


class Job:
  """The processes of one command: one alone, or two as one SLURM step."""

  def __init__(self, root: pathlib.Path, name: str, argv: list[str], processes: int):
    self.name, self.procs = name, []
    job_id = _slurm_job_id()
    for index in range(processes):
      slurm = None
      if processes > 1:
        slurm = {
          "SLURM_JOB_ID": str(job_id),
          "SLURM_STEP_NODELIST": "localhost",
          "SLURM_NTASKS": str(processes),
          "SLURM_PROCID": str(index),
          "SLURM_LOCALID": str(index),
        }
      env = _env(root / name, 8 // processes, slurm)
      (root / name).mkdir(exist_ok=True)
      with (
        open(root / name / f"p{index}.out", "w") as out,
        open(root / name / f"p{index}.err", "w") as err,
      ):
        self.procs.append(subprocess.Popen(argv, cwd=root, env=env, stdout=out, stderr=err))
    self.root = root / name

  def wait(self, timeout: float = TIMEOUT_S) -> list[int]:
    deadline = time.monotonic() + timeout
    try:
      return [p.wait(timeout=max(1.0, deadline - time.monotonic())) for p in self.procs]
    finally:
      for p in self.procs:
        if p.poll() is None:
          p.kill()
          p.wait()

  def err(self, index: int) -> str:
    return (self.root / f"p{index}.err").read_text()

  def out(self, index: int) -> str:
    return (self.root / f"p{index}.out").read_text()

  def writes(self, index: int) -> list[str]:
    path = self.root / f"writes.{index if len(self.procs) > 1 else 'single'}"
    return path.read_text().splitlines() if path.exists() else []


def _hook_dir(root: pathlib.Path, name: str) -> None:
  (root / name / "hook").mkdir(parents=True, exist_ok=True)
  (root / name / "hook" / "sitecustomize.py").write_text(SITECUSTOMIZE)


def train_job(root: pathlib.Path, name: str, processes: int, *args: str) -> Job:
  _hook_dir(root, name)
  jitr_train = shutil.which("jitr-train", path=os.path.dirname(sys.executable)) or "jitr-train"
  argv = [jitr_train, f"--config={root / 'tiny.py'}", f"--workdir={root / name / 'run'}", *args]
  return Job(root, name, argv, processes)


def _wait_for_a_checkpoint(job: Job) -> None:
  latest = job.root / "run" / "checkpoints" / "latest"
  deadline = time.monotonic() + TIMEOUT_S
  while not (latest.is_dir() and any(p.name.isdigit() for p in latest.iterdir())):
    for index, p in enumerate(job.procs):
      assert p.poll() is None, job.err(index)[-3000:]
    assert time.monotonic() < deadline, "no checkpoint was saved in time"
    time.sleep(0.1)


def final_params(workdir: pathlib.Path) -> dict[str, np.ndarray]:
  """Every array of the workdir's step-:data:`STEPS` checkpoint, restored on one device."""
  path = workdir / "checkpoints" / "latest" / str(STEPS) / "default"
  checkpointer = ocp.StandardCheckpointer()
  meta = checkpointer.metadata(path)
  tree = getattr(getattr(meta, "item_metadata", meta), "tree", meta)
  device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
  like = jax.tree.map(lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype, sharding=device), tree)
  restored = checkpointer.restore(path, like)
  return {jax.tree_util.keystr(k): np.asarray(v) for k, v in jax.tree.leaves_with_path(restored)}


def _results_table(text: str) -> str:
  lines = text.splitlines()
  start = next(i for i, line in enumerate(lines) if line.startswith("Test split"))
  return "\n".join(lines[start : start + 4])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  """The runs the tests compare: ``alone`` (one process x 8 devices), ``pod`` (two
  processes, uninterrupted) and ``preempted`` (two processes, SIGTERM to process 1 after
  the first checkpoint, then the same command again). ``preempted`` starts once ``pod``
  has saved its first checkpoint: its train step and validation programs are then in the
  compilation cache, and it reads them instead of compiling them beside ``pod``."""
  root = tmp_path_factory.mktemp("pod")
  write_precomp(root / "data", n_images=40)
  (root / "tiny.py").write_text(CONFIG.format(data=str(root / "data"), cache=str(root / "cache")))
  alone = train_job(root, "alone", 1)
  pod = train_job(root, "pod", 2)
  _wait_for_a_checkpoint(pod)
  preempted = train_job(root, "preempted", 2)
  _wait_for_a_checkpoint(preempted)
  preempted.procs[1].send_signal(signal.SIGTERM)
  stopped = preempted.wait()
  stopped_errs = [preempted.err(i) for i in range(2)]
  resumed = train_job(root, "preempted", 2)  # the same command
  return {
    "alone": (alone, alone.wait()),
    "pod": (pod, pod.wait()),
    "stopped": (preempted, stopped, stopped_errs),
    "resumed": (resumed, resumed.wait()),
  }


def test_one_command_on_two_processes_trains_like_one_process_with_all_devices(runs):
  (alone, alone_codes), (pod, pod_codes) = runs["alone"], runs["pod"]
  assert alone_codes == [0], alone.err(0)[-3000:]
  assert pod_codes == [0, 0], pod.err(0)[-3000:] + pod.err(1)[-3000:]
  one, two = final_params(alone.root / "run"), final_params(pod.root / "run")
  assert one.keys() == two.keys()
  for name in one:
    np.testing.assert_allclose(two[name], one[name], rtol=0, atol=1e-6, err_msg=name)
  metrics = json.loads((pod.root / "run" / "metrics.json").read_text())
  assert metrics == json.loads((alone.root / "run" / "metrics.json").read_text())
  # every process computed the same test metrics over the whole split and prints them
  assert _results_table(pod.out(0)) == _results_table(pod.out(1)) == _results_table(alone.out(0))
  # stdout holds the table alone: Gloo's "[Gloo] Rank N is connected ..." lines, which its
  # C++ writes to descriptor 1, go to stderr
  for index in range(2):
    assert pod.out(index).startswith("Test split"), pod.out(index)[:500]
    assert "[Gloo]" in pod.err(index)


def test_process_0_alone_writes_the_workdir_files(runs):
  pod, _ = runs["pod"]
  run = pod.root / "run"
  outside_checkpoints = [
    w
    for w in pod.writes(1)
    if w.startswith(str(run)) and not w.startswith(str(run / "checkpoints"))
  ]
  assert outside_checkpoints == []
  written = {pathlib.Path(w).name for w in pod.writes(0) if w.startswith(str(run))}
  assert {"config.json", "vocab.json", "metrics.json", "results.md"} <= written
  assert len(list((run / "tensorboard").glob("events.out.tfevents.*"))) == 1
  # the checkpoint manifests (jitr's seal of a step) come from process 0 alone
  assert [w for w in pod.writes(1) if w.endswith("jitr_manifest.json")] == []
  assert any(w.endswith("jitr_manifest.json") for w in pod.writes(0))


def test_sigterm_to_one_process_stops_both_at_one_step_and_the_same_command_resumes(runs):
  preempted, codes, errs = runs["stopped"]
  assert codes == [75, 75], errs[0][-3000:] + errs[1][-3000:]
  lasts = [e.strip().splitlines()[-1] for e in errs]
  assert lasts[0] == lasts[1], lasts
  step = int(lasts[0].split(" at step ")[1].split(";")[0])
  assert 0 < step < STEPS
  assert lasts[0] == (
    f"jitr-train: stopped by SIGTERM at step {step}; the latest checkpoint is saved: run the "
    "same command to resume"
  )
  resumed, resumed_codes = runs["resumed"]
  assert resumed_codes == [0, 0], resumed.err(0)[-3000:] + resumed.err(1)[-3000:]
  pod, _ = runs["pod"]
  uninterrupted, after_resume = final_params(pod.root / "run"), final_params(resumed.root / "run")
  for name in uninterrupted:
    np.testing.assert_array_equal(after_resume[name], uninterrupted[name], err_msg=name)


def test_two_jitr_eval_processes_write_the_report_once(runs):
  pod, _ = runs["pod"]
  root = pod.root.parent
  _hook_dir(root, "eval")
  jitr_eval = shutil.which("jitr-eval", path=os.path.dirname(sys.executable)) or "jitr-eval"
  job = Job(root, "eval", [jitr_eval, f"--workdir={pod.root / 'run'}", "--split=test"], 2)
  assert job.wait() == [0, 0], job.err(0)[-3000:] + job.err(1)[-3000:]
  report = json.loads((pod.root / "run" / "eval_test" / "metrics.json").read_text())
  trained = json.loads((pod.root / "run" / "metrics.json").read_text())
  for key, value in trained.items():
    assert report[key] == pytest.approx(value, nan_ok=True), key
  assert [w for w in job.writes(1) if "eval_test" in w] == []


def test_a_killed_process_ends_the_other_with_one_line(tmp_path):
  write_precomp(tmp_path / "data", n_images=40)
  (tmp_path / "tiny.py").write_text(
    CONFIG.format(data=str(tmp_path / "data"), cache=str(tmp_path / "cache"))
  )
  job = train_job(tmp_path, "killed", 2, "--config.num_epochs=1000")
  try:
    _wait_for_a_checkpoint(job)
    job.procs[1].kill()
    killed_at = time.monotonic()
    code = job.procs[0].wait(timeout=60)
    took = time.monotonic() - killed_at
  finally:
    job.wait(timeout=5)
  assert code == 1, job.err(0)[-3000:]
  assert took < 30  # the failed collective, or at most the 10 s heartbeat timeout
  last = job.err(0).strip().splitlines()[-1]
  assert last.startswith(
    "jitr-train: error: a collective with the other processes of the job failed ("
  ), job.err(0)[-3000:]
  assert last.endswith("another process probably stopped: see its log")


def test_two_jitr_precompute_processes_write_the_records_of_one(tmp_path):
  caps = tmp_path / "train_caps.txt"
  caps.write_text("\n".join(job_array_captions(40)) + "\n", encoding="utf-8")
  _hook_dir(tmp_path, "two")
  _hook_dir(tmp_path, "one")
  exe = shutil.which("jitr-precompute", path=os.path.dirname(sys.executable)) or "jitr-precompute"
  common = [exe, f"--captions={caps}", "--estimator=cider", "--images_per_shard=8", "--top_k=10"]
  two = Job(tmp_path, "two", [*common, f"--out={tmp_path / 'two' / 'rel'}"], 2)
  one = Job(tmp_path, "one", [*common, f"--out={tmp_path / 'one' / 'rel'}"], 1)
  assert two.wait() == [0, 0], two.err(0)[-3000:] + two.err(1)[-3000:]
  assert one.wait() == [0], one.err(0)[-3000:]
  split, single = folder_bytes(tmp_path / "two" / "rel"), folder_bytes(tmp_path / "one" / "rel")
  assert len(single) == 11  # 5 shards, their checksums and the header
  assert split == single
  # each process wrote its own shards: s % 2 == its SLURM_PROCID
  for index in range(2):
    shards = {
      int(pathlib.Path(w).name.split("-")[1])
      for w in two.writes(index)
      if pathlib.Path(w).name.endswith(".tfrecord")
    }
    assert shards == {s for s in range(5) if s % 2 == index}
