"""Damaged checkpoints and non-finite scores on a tiny two-epoch precomp run (trained once
per module in this process, copied per case): jitr-eval refuses a damaged checkpoint in
one line naming the step and the file and writes nothing (once through the console script,
then a seeded loop of random damage through the same reporting path in this process);
jitr-train resumes from the older intact checkpoint and says which it skipped; no score is
reported from NaN similarities.

The units live beside their modules: tests/training/test_checkpoint_manifest.py.
"""

import json
import logging
import os
import pathlib
import re
import shutil
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr import experiment
from jitr.apps import _cli
from jitr.experiment import evaluate
from jitr.experiment.finite_scores import NonFiniteScoresError, refuse_nonfinite_scores
from jitr.experiment.train import validation_metrics
from jitr.training.checkpoint_manifest import MANIFEST_NAME, verify_manifest
from jitr.training.checkpoints import CheckpointCorruptError, Checkpoints
from tests.apps.test_faults import REPO, _last_line
from tests.file_fixtures import precomp_config, snapshot, write_precomp

STEPS_PER_EPOCH = 6  # 100 train captions / batch 16, the remainder dropped
LAST = str(2 * STEPS_PER_EPOCH)  # the newest latest checkpoint


def _config(data):
  config = precomp_config(data)
  config.num_epochs = 2
  return config


def _jitr_eval(workdir, *args: str) -> subprocess.CompletedProcess:
  exe = shutil.which("jitr-eval") or str(pathlib.Path(sys.executable).with_name("jitr-eval"))
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  env["XLA_FLAGS"] = " ".join(
    f for f in env.get("XLA_FLAGS", "").split() if "xla_force_host_platform_device_count" not in f
  )
  return subprocess.run(
    [exe, f"--workdir={workdir}", *args],
    cwd=workdir,
    env=env,
    capture_output=True,
    text=True,
    timeout=600,
  )


def _eval_in_process(workdir, error: type[Exception]) -> str:
  """``jitr-eval --workdir=WORKDIR`` without a new process (the app's call through its
  reporting helper), refused with ``error``: the one line it exits 1 with."""
  with pytest.raises(SystemExit) as refused:
    _cli.run_reporting_bad_input("jitr-eval", lambda: experiment.evaluate_workdir(str(workdir)))
  assert isinstance(refused.value.__cause__, error), repr(refused.value.__cause__)
  line = refused.value.code
  assert isinstance(line, str) and "\n" not in line, line
  return line


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  """``(root, run)``: a finished two-epoch run (latest steps 6 and 12, one best) that
  jitr-eval has scored once (``eval_test/metrics.json``), its data under ``root/data``."""
  root = tmp_path_factory.mktemp("damage")
  write_precomp(root / "data")
  run = root / "run"
  result = experiment.train_and_evaluate(_config(root / "data"), str(run))
  assert result.finished and np.isfinite(result.metrics["full/rsum"])
  assert sorted(os.listdir(run / "checkpoints" / "latest")) == [LAST, str(STEPS_PER_EPOCH)]
  assert len(os.listdir(run / "checkpoints" / "best")) == 1
  metrics = experiment.evaluate_workdir(str(run))  # the intact checkpoint is scored
  written = json.loads((run / "eval_test" / "metrics.json").read_text())
  assert written["nonfinite_scores"] == metrics["nonfinite_scores"] == 0.0
  assert np.isfinite(written["full/rsum"])
  return root, run


def _copy(run, tmp_path) -> pathlib.Path:
  return pathlib.Path(shutil.copytree(run, tmp_path / "run"))


def _garble(path: pathlib.Path, offset: int, rng: np.random.Generator, n: int = 16) -> None:
  """Random bytes over ``n`` bytes of ``path`` from ``offset`` (each one changed; the
  size stays)."""
  data = bytearray(path.read_bytes())
  end = min(offset + n, len(data))
  noise = rng.integers(1, 256, size=end - offset, dtype=np.uint8)
  data[offset:end] = (np.frombuffer(bytes(data[offset:end]), np.uint8) ^ noise).tobytes()
  path.write_bytes(bytes(data))


def _evaluated_step(run: pathlib.Path, which: str) -> pathlib.Path:
  """The step folder that ``jitr-eval --checkpoint=WHICH`` restores (best keeps one)."""
  if which == "latest":
    return run / "checkpoints" / "latest" / LAST
  (step,) = (run / "checkpoints" / "best").iterdir()
  return step


def _largest_data_file(step: pathlib.Path) -> pathlib.Path:
  return max((p for p in (step / "default").rglob("d/*") if p.is_file()), key=os.path.getsize)


def _sha_refusal(step: pathlib.Path, damaged: pathlib.Path) -> str:
  """The pattern of jitr-eval's line for a data file whose sha256 differs."""
  return (
    re.escape(f"jitr-eval: error: checkpoint {step} cannot be restored: {damaged}: ")
    + re.escape(f"sha256 differs from {MANIFEST_NAME} (got ")
    + r"[0-9a-f]{12}\.\.\., expected [0-9a-f]{12}\.\.\.\)"
  )


# ---------------------------------------------------------------- jitr-eval: damaged checkpoint
def test_eval_refuses_a_garbled_best_checkpoint_in_one_line_naming_the_file(trained, tmp_path):
  """The console script itself: exit 1, one line (no traceback), nothing written."""
  run = _copy(trained[1], tmp_path)
  step = _evaluated_step(run, "best")
  damaged = _largest_data_file(step)
  _garble(damaged, os.path.getsize(damaged) // 2, np.random.default_rng(0))
  before = snapshot(run)
  out = _jitr_eval(run)
  assert out.returncode == 1, out.stderr[-3000:]
  assert "Traceback" not in out.stderr, out.stderr[-3000:]
  assert re.fullmatch(_sha_refusal(step, damaged), _last_line(out.stderr)), out.stderr[-2000:]
  assert snapshot(run) == before  # eval_test/metrics.json and the rest unchanged


def test_no_garbled_checkpoint_file_is_ever_scored(trained, tmp_path):
  """Random bytes at a random offset of a random file of the evaluated checkpoint (best or
  latest, seeded), evaluated as jitr-eval does in this process: refused with
  CheckpointCorruptError, one line naming the step and the file, nothing written. Success
  is allowed only for a manifest whose JSON value did not change (a whitespace byte
  swapped for another): every checkpoint file is then intact."""
  rng = np.random.default_rng(20240611)
  original = trained[1]
  for case in range(8):
    which = ("best", "latest")[case % 2]
    step = _evaluated_step(original, which)
    files = sorted(p.relative_to(step) for p in step.rglob("*") if p.is_file())
    rel = files[rng.integers(len(files))]
    size = os.path.getsize(step / rel)
    offset = int(rng.integers(size))
    case_dir = tmp_path / str(case)
    run = _copy(original, case_dir)
    damaged = _evaluated_step(run, which) / rel
    _garble(damaged, offset, rng)
    before = snapshot(run)
    where = f"case {case}: {which}/{step.name}/{rel} at byte {offset} of {size}"
    try:
      _cli.run_reporting_bad_input(
        "jitr-eval",
        lambda run=run, which=which: experiment.evaluate_workdir(str(run), checkpoint=which),
      )
    except SystemExit as err:
      refusal = err
    else:
      assert str(rel) == MANIFEST_NAME, where
      assert json.loads(damaged.read_text()) == json.loads((step / rel).read_text()), where
      assert snapshot(run) == before, where
      continue
    assert snapshot(run) == before, where  # nothing written
    line = refusal.code
    assert isinstance(refusal.__cause__, CheckpointCorruptError), (where, repr(refusal.__cause__))
    assert isinstance(line, str) and "\n" not in line, (where, line)
    assert line.startswith(
      f"jitr-eval: error: checkpoint {damaged.parents[len(rel.parts) - 1]} "
    ), (where, line)
    if str(rel) != MANIFEST_NAME:  # a changed manifest names the file that does not match it
      assert f"{damaged}: " in line, (where, line)
    shutil.rmtree(case_dir)


# ---------------------------------------------------------------- jitr-train: damaged latest
def test_train_resumes_from_the_older_checkpoint_and_says_which_it_skipped(
  trained, tmp_path, caplog
):
  root, original = trained
  run = _copy(original, tmp_path)
  step = _evaluated_step(run, "latest")
  damaged = _largest_data_file(step)
  _garble(damaged, os.path.getsize(damaged) // 3, np.random.default_rng(1))
  with caplog.at_level(logging.WARNING):
    result = experiment.train_and_evaluate(_config(root / "data"), str(run))
  log = caplog.text
  assert result.finished
  assert "loss is nan" not in log
  assert f"checkpoint {step} is damaged, trying an older one: {damaged}: sha256 differs" in log
  assert (
    f"restored checkpoint step {STEPS_PER_EPOCH} from {step.parent} after skipping the "
    f"damaged step {LAST} ({damaged}: sha256 differs"
  ) in log
  assert f"deleting damaged checkpoint {step} (replaced by the save of step {LAST})" in log
  assert verify_manifest(str(step)) is None  # saved again by the resumed epoch
  metrics = json.loads((run / "metrics.json").read_text())
  assert metrics == result.metrics
  assert metrics["nonfinite_scores"] == 0.0 and np.isfinite(metrics["full/rsum"])


# ---------------------------------------------------------------- non-finite scores
def test_refuse_nonfinite_scores_names_the_count_and_what_was_scored():
  metrics = {"nonfinite_scores": 0.0, "full/rsum": 300.0}
  assert refuse_nonfinite_scores(metrics, "checkpoint w/checkpoints/best/10") is metrics
  assert refuse_nonfinite_scores({"full/rsum": 1.0}, "x") == {"full/rsum": 1.0}
  with pytest.raises(NonFiniteScoresError) as err:
    refuse_nonfinite_scores({"nonfinite_scores": 3.0, "full/rsum": 0.0}, "checkpoint c/10")
  assert str(err.value) == (
    "checkpoint c/10: 3 similarity score(s) are NaN or infinite; expected finite scores, "
    "so no metric is reported or written"
  )


def test_validation_with_a_nan_score_stops_training_before_the_state_is_saved():
  class State:
    step = jnp.asarray(15)
    variables = {}

  def evaluate_split(split, variables):
    assert split == "val"
    return {"nonfinite_scores": 50.0, "full/rsum": 0.0, "rsum": 0.0}

  with pytest.raises(NonFiniteScoresError) as err:
    validation_metrics(evaluate_split, State())
  assert str(err.value).startswith(
    "validation of step 15 on the val split (this state was not saved): 50 similarity "
    "score(s) are NaN or infinite"
  )
  assert isinstance(err.value, ValueError)  # jitr-train: one line, exit 1


def test_eval_refuses_a_checkpoint_whose_scores_are_nan(trained, tmp_path):
  """An intact checkpoint (its manifest matches) of a model with a NaN weight: every
  score is NaN, so jitr-eval names the count and the checkpoint and writes nothing."""
  run = _copy(trained[1], tmp_path)
  model, state = evaluate.restore_member(evaluate.load_member(str(run)), "best")
  leaves, tree = jax.tree.flatten(state.params)
  leaves[0] = jnp.full_like(leaves[0], jnp.nan)
  nan_step = int(LAST) + 1
  nan_state = state.replace(params=jax.tree.unflatten(tree, leaves), step=jnp.asarray(nan_step))
  checkpoints = Checkpoints(str(run))
  assert checkpoints.save_best(nan_state, {"rsum": 1e9})
  checkpoints.close()
  step = run / "checkpoints" / "best" / str(nan_step)
  assert verify_manifest(str(step)) is None
  before = snapshot(run)
  line = _eval_in_process(run, NonFiniteScoresError)
  assert re.fullmatch(
    re.escape(f"jitr-eval: error: checkpoint {step} on the test split: ")
    + r"[1-9]\d* similarity score\(s\) are NaN or infinite; expected finite scores, so no "
    r"metric is reported or written",
    line,
  ), line
  assert snapshot(run) == before
