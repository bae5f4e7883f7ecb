"""Faults that could lose work or bury the one line that matters under library tracebacks:
a disk that fills up while a checkpoint is saved, Ctrl-C during jitr-train (and a second one
during its save), every latest checkpoint damaged in a way only orbax's read finds.

Each ends in one line on stderr (after absl's log lines), with no "Traceback" and no
"Exception ignored" anywhere, and leaves every complete checkpoint intact (its manifest
verifies). The disk that fills up is real where the system allows it: a tmpfs of a few
hundred KiB mounted in a private mount namespace (``unshare``); elsewhere those cases are
skipped and the in-process ones (the same code path, the write call patched) still run.
"""

import errno
import functools
import gc
import glob
import logging
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types

import jax
import optax
import orbax.checkpoint as ocp
import pytest

from jitr import fileio
from jitr.apps import _one_line as _cli
from jitr.apps import train
from jitr.training import checkpoints as checkpoints_lib
from jitr.training.checkpoint_manifest import MANIFEST_NAME, verify_manifest, write_manifest
from jitr.training.checkpoints import (
  CheckpointCorruptError,
  Checkpoints,
  DiskFullError,
  OrbaxErrorsInOneLine,
)
from jitr.training.loop import StopRequested
from tests.apps.test_faults import REPO, _jitr_train, _last_line
from tests.file_fixtures import write_precomp
from tests.training import tiny

# What tensorstore's write says (through orbax, as a ValueError) when the disk is full.
TENSORSTORE_DISK_FULL = (
  'RESOURCE_EXHAUSTED: Error writing "opt_state.1.0.nu.gru/0.0" in OCDBT database at local '
  'file "/w/checkpoints/latest/12.orbax-checkpoint-tmp/default.orbax-checkpoint-tmp/": '
  "Failed to write 186382 bytes to file 8: No space left on device [os_error_code='28']"
)

# A tiny precomp run as a config file (jitr-train reads configs from files): precomp_config,
# two epochs, every step logged (6 steps of 16 per epoch over write_precomp's 100 captions).
TINY_CONFIG = """
import pathlib

from tests.file_fixtures import precomp_config


def get_config():
  config = precomp_config(pathlib.Path({data!r}))
  config.data_dir = {cache!r}
  config.num_epochs = 2
  config.log_every_steps = 1
  return config
"""


def tiny_config_file(root: pathlib.Path) -> pathlib.Path:
  """``root/tiny.py``: :data:`TINY_CONFIG` over ``write_precomp(root / "data")``."""
  write_precomp(root / "data")
  path = root / "tiny.py"
  path.write_text(TINY_CONFIG.format(data=str(root / "data"), cache=str(root / "cache")))
  return path


def assert_one_clean_line(err: str, line: str) -> None:
  """``line`` is the last line of ``err``, and no library traceback is anywhere in it."""
  assert "Traceback" not in err, err[-4000:]
  assert "Exception ignored" not in err, err[-4000:]
  assert _last_line(err) == line, err[-3000:]


def intact_steps(folder) -> list[int]:
  """The step folders under ``folder`` that match their manifest, sorted."""
  steps = [int(n) for n in os.listdir(folder) if n.isdigit()]
  return sorted(s for s in steps if verify_manifest(os.path.join(folder, str(s))) is None)


# ---------------------------------------------------------------- a disk that fills up
@functools.cache
def _namespace_prefix() -> tuple[str, ...] | None:
  """The ``unshare`` command that starts a private mount namespace in which a tmpfs can be
  mounted (``-rm`` maps this user to root; ``-m`` as root), or ``None`` on this system."""
  exe = shutil.which("unshare")
  if exe is None:
    return None
  probe_dir = tempfile.mkdtemp()
  try:
    for flags in (("-rm",), ("-m",)):
      probe = subprocess.run(
        [exe, *flags, "sh", "-c", 'mount -t tmpfs -o size=8k tmpfs "$0"', probe_dir],
        capture_output=True,
        timeout=60,
      )
      if probe.returncode == 0:
        return (exe, *flags)
  finally:
    os.rmdir(probe_dir)
  return None


# Mounts a tmpfs of "$1" KiB on the empty folder "$2", runs the rest of the arguments, then
# copies what they left on it to "$3" (the tmpfs goes with the namespace).
_SMALL_DISK_SCRIPT = (
  'mount -t tmpfs -o size="$1"k tmpfs "$2" || exit 97; disk="$2"; kept="$3"; shift 3; '
  '"$@"; status=$?; cp -a "$disk/." "$kept/"; exit $status'
)


def run_on_small_disk(mount, size_kib: int, argv: list[str], *, keep, **kwargs):
  """Runs ``argv`` (``subprocess.run`` keywords) where the empty folder ``mount`` is a tmpfs
  of ``size_kib`` KiB; what the command left on it is copied to the empty folder ``keep``.
  Skips the test where no private mount namespace is allowed."""
  prefix = _namespace_prefix()
  if prefix is None:
    pytest.skip("needs unshare and a tmpfs mount in a private mount namespace")
  os.makedirs(mount, exist_ok=True)
  os.makedirs(keep, exist_ok=True)
  out = subprocess.run(
    [*prefix, "sh", "-c", _SMALL_DISK_SCRIPT, "sh", str(size_kib), str(mount), str(keep), *argv],
    capture_output=True,
    text=True,
    **kwargs,
  )
  assert out.returncode != 97, out.stderr[-2000:]  # the tmpfs did not mount
  return out


def train_env() -> dict[str, str]:
  """The environment of a jitr-train child: the repository importable, one CPU device."""
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  env["XLA_FLAGS"] = " ".join(
    f for f in env.get("XLA_FLAGS", "").split() if "xla_force_host_platform_device_count" not in f
  )
  return env


def jitr_train_exe() -> str:
  return shutil.which("jitr-train") or str(pathlib.Path(sys.executable).with_name("jitr-train"))


@pytest.fixture(scope="module")
def full_disk_run(tmp_path_factory):
  """``(root, out)``: a three-epoch jitr-train run on a real full disk, once per module:
  ``root/run/checkpoints/latest`` is a tmpfs that holds steps 6 and 12 (about 460 KiB
  each) but not step 18; what it held is copied to ``root/kept``."""
  root = tmp_path_factory.mktemp("full_disk")
  config = tiny_config_file(root)
  latest = root / "run" / "checkpoints" / "latest"
  out = run_on_small_disk(
    latest,
    1150,
    [jitr_train_exe(), f"--config={config}", f"--workdir={root / 'run'}", "--config.num_epochs=3"],
    keep=root / "kept",
    cwd=root,
    env=train_env(),
    timeout=600,
  )
  return root, out


def _run_with_kept(root, tmp_path) -> pathlib.Path:
  """A copy of the full-disk run whose ``checkpoints/latest`` (on a disk with room now)
  holds what the full disk kept; returns the copy's workdir."""
  run = pathlib.Path(shutil.copytree(root / "run", tmp_path / "run"))
  latest = run / "checkpoints" / "latest"
  os.rmdir(latest)
  shutil.copytree(root / "kept", latest)
  return run


def _train_again(root, run, *args) -> subprocess.CompletedProcess:
  """The same jitr-train command on ``run`` (and ``args``)."""
  return subprocess.run(
    [jitr_train_exe(), f"--config={root / 'tiny.py'}", f"--workdir={run}", *args],
    cwd=root,
    env=train_env(),
    capture_output=True,
    text=True,
    timeout=600,
  )


def test_disk_full_while_checkpointing_is_one_line_and_keeps_the_earlier_step(full_disk_run):
  root, out = full_disk_run
  latest = root / "run" / "checkpoints" / "latest"
  assert out.returncode == 1, out.stderr[-3000:]
  assert_one_clean_line(
    out.stderr,
    f"jitr-train: error: [Errno 28] disk full: could not save checkpoint step 18 in {latest}; "
    "free space and run the same command to resume",
  )
  assert sorted(os.listdir(root / "kept")) == ["12", "6"]  # no orbax temporary, no step 18
  assert intact_steps(root / "kept") == [6, 12]


@pytest.mark.slow  # 15 s: a second training process
def test_after_a_full_disk_the_same_command_resumes_and_finishes(full_disk_run, tmp_path):
  root, _ = full_disk_run
  run = _run_with_kept(root, tmp_path)
  rerun = _train_again(root, run, "--config.num_epochs=3")
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert intact_steps(run / "checkpoints" / "latest") == [12, 18]
  assert (run / "metrics.json").is_file()


def test_every_latest_step_damaged_where_only_orbax_can_tell_is_one_clean_line(
  full_disk_run, tmp_path
):
  """Zeroed array data under a manifest rewritten to match (damaged before it was sealed):
  orbax's read fails; the user sees the one line, none of orbax's tracebacks."""
  root, _ = full_disk_run
  run = _run_with_kept(root, tmp_path)
  latest = run / "checkpoints" / "latest"
  for step in ("6", "12"):
    _zero_array_data(latest / step)
    write_manifest(str(latest / step))
  damaged = _train_again(root, run, "--config.num_epochs=4")
  assert damaged.returncode == 1, damaged.stderr[-3000:]
  assert "Traceback" not in damaged.stderr, damaged.stderr[-4000:]
  assert "Exception ignored" not in damaged.stderr, damaged.stderr[-4000:]
  assert re.fullmatch(
    re.escape(f"jitr-train: error: {latest}: no checkpoint can be restored (step 12 (ValueError: ")
    + r"[^\n]*"
    + re.escape("); delete the folder to start again from scratch"),
    _last_line(damaged.stderr),
  ), damaged.stderr[-3000:]


def _zero_array_data(step_dir) -> None:
  """Overwrites every array data file of a checkpoint step with zeros of the same size."""
  files = glob.glob(os.path.join(step_dir, "default", "**", "d", "*"), recursive=True)
  assert files
  for path in files:
    with open(path, "r+b") as f:
      f.write(b"\0" * os.path.getsize(path))


@pytest.fixture
def saved(tmp_path):
  """``(workdir, state)``: latest checkpoints at steps 3 and 6 of a tiny model."""
  state = tiny.make_state(optax.adam(1e-2))
  with Checkpoints(str(tmp_path)) as checkpoints:
    for step in (3, 6):
      checkpoints.save_latest(state.replace(step=jax.numpy.asarray(step)))
  return tmp_path, state


def _orbax_full_disk(latest: str, *, sealed_fails: bool):
  """A stand-in for ``CheckpointManager.save`` on a full disk: orbax's temporary folder of
  the step is left behind and tensorstore's ValueError raised; with ``sealed_fails`` the
  save itself completes and the manifest's write fails (``OSError(ENOSPC)``) instead."""
  real_save = ocp.CheckpointManager.save

  def save(self, step, *args, **kwargs):
    if sealed_fails:
      return real_save(self, step, *args, **kwargs)
    tmp = os.path.join(latest, f"{step}.orbax-checkpoint-tmp", "default")
    os.makedirs(tmp)
    pathlib.Path(tmp, "partial").write_bytes(b"\0" * 100)
    raise ValueError(TENSORSTORE_DISK_FULL)

  return save


@pytest.mark.parametrize("where", ["orbax's write", "the manifest's write"])
def test_disk_full_during_a_save_is_one_line_and_the_next_save_works(saved, monkeypatch, where):
  workdir, state = saved
  latest = os.path.join(workdir, "checkpoints", "latest")
  checkpoints = Checkpoints(str(workdir))
  sealed_fails = where == "the manifest's write"
  monkeypatch.setattr(
    ocp.CheckpointManager, "save", _orbax_full_disk(latest, sealed_fails=sealed_fails)
  )
  if sealed_fails:
    real_write = fileio.write_json_atomic

    def full(path, *args, **kwargs):
      if str(path).endswith(MANIFEST_NAME):
        raise OSError(errno.ENOSPC, "No space left on device")
      return real_write(path, *args, **kwargs)

    monkeypatch.setattr(fileio, "write_json_atomic", full)
  with pytest.raises(DiskFullError) as err:
    checkpoints.save_latest(state.replace(step=jax.numpy.asarray(9)))
  assert str(err.value) == (
    f"[Errno 28] disk full: could not save checkpoint step 9 in {latest}; "
    "free space and run the same command to resume"
  )
  assert err.value.errno == errno.ENOSPC
  assert sorted(os.listdir(latest)) == ["3", "6"]  # no temporary, no unsealed step 9
  assert intact_steps(latest) == [3, 6]
  monkeypatch.undo()  # space freed: the same save now succeeds
  checkpoints.save_latest(state.replace(step=jax.numpy.asarray(9)))
  checkpoints.close()
  assert intact_steps(latest) == [6, 9]


@pytest.mark.parametrize(
  ("err", "full"),
  [
    (OSError(errno.ENOSPC, "No space left on device"), True),
    (ValueError(TENSORSTORE_DISK_FULL), True),
    (RuntimeError("ResourceExhaustedError: /d/x.tfrecord; No space left on device"), True),
    (OSError(errno.EACCES, "Permission denied"), False),
    (ValueError("RESOURCE_EXHAUSTED: out of memory"), False),
  ],
)
def test_is_disk_full_reads_errno_and_library_messages(err, full):
  assert fileio.is_disk_full(err) is full
  try:
    raise KeyError("wrapped") from err
  except KeyError as wrapper:
    assert fileio.is_disk_full(wrapper) is full


# ---------------------------------------------------------------- library noise
def _raised_in(filename: str):
  """``sys.exc_info()`` of a ValueError raised by code of the file ``filename``."""
  try:
    exec(compile(f"raise ValueError({TENSORSTORE_DISK_FULL!r})", filename, "exec"))
  except ValueError:
    return sys.exc_info()


@pytest.mark.parametrize(
  ("logger", "path", "raised_in", "quieted"),
  [
    ("absl", "/site-packages/orbax/checkpoint/future.py", "/site-packages/orbax/x.py", True),
    ("asyncio", "/lib/asyncio/base_events.py", "/site-packages/orbax/serialization.py", True),
    ("asyncio", "/lib/asyncio/base_events.py", "/work/jitr/data/pairs.py", False),
    ("absl", "/work/jitr/training/loop.py", "/work/jitr/training/loop.py", False),
  ],
)
def test_orbax_errors_with_a_traceback_become_one_warning_line(logger, path, raised_in, quieted):
  record = logging.LogRecord(
    logger, logging.ERROR, path, 1, "failed: %s\nmore", ("x",), _raised_in(raised_in), None
  )
  assert OrbaxErrorsInOneLine().filter(record)
  if quieted:
    assert (record.levelno, record.getMessage(), record.exc_info) == (
      logging.WARNING,
      "failed: x",
      None,
    )
  else:
    assert record.levelno == logging.ERROR and record.exc_info is not None


# A restore's read of zeroed array data, as tensorstore fails the future.
TENSORSTORE_DATA_LOSS = (
  'DATA_LOSS: Error opening "cast" driver: Error opening "zarr" driver: Error reading '
  '"opt_state.1.0.nu/.zarray" in OCDBT database at local file "/tmp/run/checkpoints/latest/6/"'
)


def _future_error(message: str):
  """``sys.exc_info()``-like triple of a ValueError without a traceback (as a future that
  tensorstore failed holds it)."""
  err = ValueError(message)
  return (ValueError, err, None)


@pytest.mark.parametrize(
  ("what", "exc_info", "dropped"),
  [
    ("Task", _raised_in("/site-packages/orbax/serialization.py"), True),
    ("Task", _future_error("something else"), False),
    ("Future", _future_error(TENSORSTORE_DISK_FULL), True),
    ("Future", _future_error("something else"), False),
    ("_GatheringFuture", _future_error(TENSORSTORE_DISK_FULL), True),
    ("_GatheringFuture", _future_error("something else"), False),
    ("Future", _future_error(TENSORSTORE_DATA_LOSS), True),
    ("Task", _future_error("DATA_LOSS: a status of something else"), False),
  ],
)
def test_an_unretrieved_orbax_task_is_dropped(what, exc_info, dropped):
  """asyncio logs "Task / Future exception was never retrieved" when a failed orbax task or
  future is collected, which can be after jitr-train's one line: such records (raised in
  orbax, or tensorstore's full disk) are dropped, others kept."""
  record = logging.LogRecord(
    "asyncio",
    logging.ERROR,
    "/lib/asyncio/base_events.py",
    1,
    f"{what} exception was never retrieved\nfuture: <{what} finished>",
    (),
    exc_info,
    None,
  )
  assert OrbaxErrorsInOneLine().filter(record) is not dropped


def test_closed_loop_callbacks_are_dropped_and_other_unraisables_kept(monkeypatch):
  seen = []
  monkeypatch.setattr(sys, "unraisablehook", seen.append)
  checkpoints_lib.drop_closed_loop_callbacks()
  checkpoints_lib.drop_closed_loop_callbacks()  # installed once

  def unraisable(err):
    return types.SimpleNamespace(
      exc_type=type(err), exc_value=err, exc_traceback=None, err_msg=None, object=None
    )

  sys.unraisablehook(unraisable(RuntimeError("Event loop is closed")))
  other = unraisable(RuntimeError("something else"))
  sys.unraisablehook(other)
  assert seen == [other]


def test_every_latest_step_damaged_past_its_manifest_is_one_error_and_no_traceback(saved, capfd):
  """Zeroed array data under a manifest rewritten to match: only orbax's read finds the
  damage; one CheckpointCorruptError names both steps and nothing is printed to stderr
  (the jitr-train process above proves the same of the user's terminal)."""
  workdir, state = saved
  for step in (3, 6):
    step_dir = os.path.join(workdir, "checkpoints", "latest", str(step))
    _zero_array_data(step_dir)
    write_manifest(step_dir)
  capfd.readouterr()
  with Checkpoints(str(workdir)) as checkpoints, pytest.raises(CheckpointCorruptError) as err:
    checkpoints.restore(state)
  assert re.match(r".*: no checkpoint can be restored \(step 6 \(ValueError: ", str(err.value))
  printed = capfd.readouterr()
  assert "Traceback" not in printed.err and "Exception ignored" not in printed.err


# ---------------------------------------------------------------- Ctrl-C
def ctrl_c() -> None:
  """Sends SIGINT to this process with the garbage collector off, so Python's handler runs
  here, in this frame: run inside a gc callback (a library's, at the next collection) a
  KeyboardInterrupt it raises would be swallowed as an unraisable error."""
  gc.disable()
  try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0)  # a call: the pending handler runs at the latest here
  finally:
    gc.enable()


def test_sigint_requests_a_stop_and_a_second_one_interrupts_at_once():
  before = signal.getsignal(signal.SIGINT)
  with StopRequested() as stop:
    assert not stop() and stop.signal_number is None
    ctrl_c()
    assert stop() and stop.signal_number == signal.SIGINT
    with pytest.raises(KeyboardInterrupt):
      ctrl_c()
    os.kill(os.getpid(), signal.SIGTERM)  # the first signal is the one recorded
    assert stop.signal_number == signal.SIGINT
  assert signal.getsignal(signal.SIGINT) is before
  assert signal.getsignal(signal.SIGTERM) is not stop.request


@pytest.mark.parametrize(
  ("stop_signal", "status", "line"),
  [
    (
      signal.SIGINT,
      130,
      "interrupted (Ctrl-C) at step 17; the latest checkpoint is saved: run the same command "
      "to resume",
    ),
    (
      signal.SIGTERM,
      75,
      "stopped by SIGTERM at step 17; the latest checkpoint is saved: run the same command "
      "to resume",
    ),
  ],
)
def test_a_stopped_run_exits_with_its_signal_status_and_one_line(stop_signal, status, line):
  assert train.stopped_exit(stop_signal, 17) == (status, line)


def test_ctrl_c_outside_the_loop_is_one_line_and_status_130(capsys):
  def body():
    raise KeyboardInterrupt

  with pytest.raises(SystemExit) as err:
    _cli.run_reporting_bad_input("jitr-train", body, interrupted=train.INTERRUPTED_LINE)
  assert err.value.code == _cli.INTERRUPTED_EXIT_STATUS == 130
  assert capsys.readouterr().err == f"jitr-train: {train.INTERRUPTED_LINE}\n"


@pytest.mark.parametrize("where", ["orbax's write", "the manifest's write"])
def test_a_second_ctrl_c_during_the_save_never_leaves_a_step_that_looks_complete(
  saved, monkeypatch, where
):
  """The first Ctrl-C asked for the save; the second lands inside it (in orbax's write,
  leaving its temporary folder, or in the manifest's, after orbax finished the step):
  KeyboardInterrupt at once, the step is never restored, and the next save replaces it."""
  workdir, state = saved
  latest = os.path.join(workdir, "checkpoints", "latest")

  def second_ctrl_c(*args, **kwargs):
    ctrl_c()  # the handler raises on return

  checkpoints = Checkpoints(str(workdir))
  if where == "orbax's write":

    def save(self, step, *args, **kwargs):
      os.makedirs(os.path.join(latest, f"{step}.orbax-checkpoint-tmp", "default"))
      second_ctrl_c()

    monkeypatch.setattr(ocp.CheckpointManager, "save", save)
  else:
    monkeypatch.setattr(checkpoints_lib, "write_manifest", second_ctrl_c)
  with StopRequested() as stop:
    ctrl_c()  # the first Ctrl-C
    assert stop()
    with pytest.raises(KeyboardInterrupt):
      checkpoints.save_latest(state.replace(step=jax.numpy.asarray(9)))
  checkpoints.close()
  monkeypatch.undo()
  assert intact_steps(latest) == [3, 6]
  with Checkpoints(str(workdir)) as checkpoints:
    assert int(checkpoints.restore(state).step) == 6  # step 9, if it is there, is skipped
    checkpoints.save_latest(state.replace(step=jax.numpy.asarray(9)))
  assert sorted(os.listdir(latest)) == ["6", "9"] and intact_steps(latest) == [6, 9]


def test_ctrl_c_during_training_saves_the_latest_and_exits_130(tmp_path):
  """jitr-train gets SIGINT once a step is done (its log line for step 1 is out): it saves
  that step, says so in one line and exits 130."""
  config = tiny_config_file(tmp_path)
  run = tmp_path / "run"
  proc = _jitr_train(
    f"--config={config}", f"--workdir={run}", "--config.num_epochs=1000", cwd=tmp_path
  )
  lines, stepped = [], threading.Event()

  def read_stderr():
    for line in proc.stderr:
      lines.append(line)
      if re.search(r"\] \[\d+\] train/", line):
        stepped.set()
    stepped.set()  # the process ended

  reader = threading.Thread(target=read_stderr, daemon=True)
  reader.start()
  assert stepped.wait(timeout=300), "".join(lines)[-3000:]
  assert proc.poll() is None, "".join(lines)[-3000:]
  proc.send_signal(signal.SIGINT)
  proc.wait(timeout=300)
  reader.join(timeout=60)
  err = "".join(lines)
  assert proc.returncode == 130, err[-3000:]
  latest = run / "checkpoints" / "latest"
  (step,) = intact_steps(latest)
  assert step >= 1 and sorted(os.listdir(latest)) == [str(step)]
  assert_one_clean_line(
    err,
    f"jitr-train: interrupted (Ctrl-C) at step {step}; the latest checkpoint is saved: run "
    "the same command to resume",
  )
