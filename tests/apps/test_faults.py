"""Fault injection on jitr-train: each fault gets one clear line, the documented exit status,
and leaves every file that existed before byte-identical.

Units of the same faults live beside their modules: tests/training/test_finite.py (NaN in
the loop), tests/training/test_checkpoint_faults.py (damaged checkpoint, disk full),
tests/relevance/test_records.py (flipped bytes in a shard), tests/data/test_precomp.py
(NaN features, non-UTF-8 captions).
"""

import errno
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import ml_collections
import numpy as np
import pytest

from configs import default
from jitr import experiment, fileio
from jitr.apps import _one_line as _cli
from jitr.apps import train
from jitr.experiment import workdir as workdir_lib
from jitr.experiment.run_config import resolved_config
from jitr.training.finite import NonFiniteTrainingError
from tests.file_fixtures import finished_workdir, precomp_config, snapshot, write_precomp

REPO = pathlib.Path(__file__).resolve().parents[2]


def _unchanged(before: dict[str, str], root) -> bool:
  """Every file of ``before`` still exists with the same bytes (new files may appear)."""
  after = snapshot(root)
  return all(after.get(name) == digest for name, digest in before.items())


def _jitr_train(*args: str, **kwargs) -> subprocess.Popen:
  exe = shutil.which("jitr-train") or str(pathlib.Path(sys.executable).with_name("jitr-train"))
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  # One CPU device (batches of any size); the suite's other XLA flags stay.
  env["XLA_FLAGS"] = " ".join(
    f for f in env.get("XLA_FLAGS", "").split() if "xla_force_host_platform_device_count" not in f
  )
  return subprocess.Popen(
    [exe, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs
  )


def _last_line(text: str) -> str:
  return text.strip().splitlines()[-1]


# ---------------------------------------------------------------- non-finite data and training
def test_nan_feature_in_a_precomp_folder_is_refused_before_anything_is_written(tmp_path):
  folder = write_precomp(tmp_path / "data")
  feats = np.load(folder / "train_ims.npy")
  feats[7, 3, 11] = np.nan
  np.save(folder / "train_ims.npy", feats)
  before = snapshot(tmp_path)
  proc = _jitr_train(
    f"--config={REPO / 'configs' / 'default.py'}",
    f"--workdir={tmp_path / 'run'}",
    "--config.dataset=f30k_precomp",
    f"--config.precomp_root={tmp_path / 'data'}",
    "--config.compilation_cache=False",
    cwd=tmp_path,
  )
  _, err = proc.communicate(timeout=300)
  assert proc.returncode == 1, err[-3000:]
  assert _last_line(err) == (
    f"jitr-train: error: {folder / 'train_ims.npy'}: feature [7, 3, 11] is nan (image 7); "
    "expected finite values (1 non-finite in rows 0..19)"
  )
  assert "Traceback" not in err
  assert snapshot(tmp_path) == before  # nothing written: no workdir, no cache
  assert not (tmp_path / "run").exists()


def test_nan_learning_rate_is_refused_before_anything_is_written(tmp_path):
  write_precomp(tmp_path / "data")
  config = precomp_config(tmp_path / "data")
  config.optimizer.learning_rate = float("nan")
  before = snapshot(tmp_path)
  with pytest.raises(ValueError) as err:
    experiment.train_and_evaluate(config, str(tmp_path / "run"))
  assert str(err.value) == "config.optimizer.learning_rate: expected a finite number > 0, got nan"
  assert snapshot(tmp_path) == before and not (tmp_path / "run").exists()


@pytest.mark.slow  # 30 s; the loop's own test (tests/training/test_finite.py) is fast
def test_diverging_learning_rate_stops_the_run_before_any_checkpoint(tmp_path):
  write_precomp(tmp_path / "data")
  config = precomp_config(tmp_path / "data")
  config.optimizer.learning_rate = 3e38  # finite, but the first update overflows float32
  with pytest.raises(NonFiniteTrainingError) as err:
    experiment.train_and_evaluate(config, str(tmp_path / "run"))
  assert re.fullmatch(
    r"step \d+: loss is (nan|inf) \(loss=\S+, grad_norm=\S+\); training stopped without "
    r"saving this state; no checkpoint was saved\. Lower optimizer\.learning_rate or look "
    r"for NaN/Inf in the data",
    str(err.value),
  ), str(err.value)
  assert os.listdir(tmp_path / "run" / "checkpoints" / "latest") == []
  assert not (tmp_path / "run" / "metrics.json").exists()


# ---------------------------------------------------------------- nothing written before valid
def test_changed_model_on_a_finished_workdir_is_refused_and_changes_nothing(tmp_path):
  write_precomp(tmp_path / "data")
  workdir = tmp_path / "run"
  before = finished_workdir(workdir, precomp_config(tmp_path / "data"))
  config = precomp_config(tmp_path / "data")
  config.model.embed_dim = 32
  config.optimizer.name = "sgd"
  with pytest.raises(ValueError) as err:
    experiment.train_and_evaluate(config, str(workdir))
  assert str(err.value) == (
    f"workdir {workdir} was trained with model.embed_dim=16 (this config: 32); "
    f'optimizer.name="adam" (this config: "sgd"); use a new --workdir (or delete {workdir}) '
    "to start a different run"
  )
  assert snapshot(workdir) == before


def test_a_longer_schedule_on_a_finished_workdir_is_accepted_and_recorded(tmp_path):
  write_precomp(tmp_path / "data")
  config = resolved_config(precomp_config(tmp_path / "data"))  # as jitr-train checks it
  before = finished_workdir(tmp_path / "run", config)
  saved = json.loads((tmp_path / "run" / "config.json").read_text())
  config.num_epochs = 3
  workdir_lib.check_workdir(config, str(tmp_path / "run"))  # extends the schedule: accepted
  assert workdir_lib.record_config(config, str(tmp_path / "run"))
  assert json.loads((tmp_path / "run" / "config.json").read_text()) == {**saved, "num_epochs": 3}
  after = snapshot(tmp_path / "run")
  assert after.pop("config.json") != before.pop("config.json") and after == before
  config.optimizer.learning_rate = 1e-4  # another schedule: refused
  with pytest.raises(ValueError, match=r"optimizer.learning_rate=0.0005 \(this config: 0.0001\)"):
    workdir_lib.check_workdir(config, str(tmp_path / "run"))


def test_batch_larger_than_the_data_is_refused_before_the_workdir_is_written(tmp_path):
  write_precomp(tmp_path / "data")
  config = precomp_config(tmp_path / "data")
  config.batch_size = 128  # the train split has 100 captions
  before = snapshot(tmp_path)
  with pytest.raises(ValueError, match=r"^batch_size 128 is larger than the split's 100 captions"):
    experiment.train_and_evaluate(config, str(tmp_path / "run"))
  assert not (tmp_path / "run").exists()
  assert _unchanged(before, tmp_path)


def test_unreadable_config_json_of_a_workdir_names_file_and_line(tmp_path):
  (tmp_path / "config.json").write_text('{\n  "dataset": "jitr_shapes",\n  oops\n}\n')
  with pytest.raises(ValueError, match=r"config.json:3: not valid JSON \(Expecting"):
    workdir_lib.check_workdir(default.get_config(), str(tmp_path))
  (tmp_path / "config.json").write_bytes(b'{"dataset": "caf\xe9"}')
  with pytest.raises(ValueError, match=r"config.json: not UTF-8 \(byte offset 16\)"):
    workdir_lib.check_workdir(default.get_config(), str(tmp_path))


# ---------------------------------------------------------------- one clear line for bad input
@pytest.mark.parametrize(
  ("field", "value", "message"),
  [
    ("batch_size", 0, "config.batch_size: expected a whole number >= 1, got 0"),
    ("num_epochs", -2, "config.num_epochs: expected a whole number >= 0, got -2"),
    ("eval_batch_size", 0, "config.eval_batch_size: expected a whole number >= 1, got 0"),
    ("log_every_steps", 0, "config.log_every_steps: expected a whole number >= 1, got 0"),
    ("max_caption_len", 0, "config.max_caption_len: expected a whole number >= 1, got 0"),
    ("eval_folds", -1, "config.eval_folds: expected a whole number >= 0, got -1"),
    ("prefetch", -1, "config.prefetch: expected a whole number >= 0, got -1"),
    ("top_k", 0, "config.top_k: expected a whole number >= 1, got 0"),
    ("batch_size", 16.5, "config.batch_size: expected a whole number >= 1, got 16.5 (float)"),
    ("log_every_steps", True, "config.log_every_steps: expected a whole number >= 1, got True"),
  ],
)
def test_counts_are_validated_before_anything_is_written(tmp_path, field, value, message):
  config = default.get_config()
  with config.ignore_type():
    config[field] = value
  with pytest.raises(ValueError) as err:
    experiment.train_and_evaluate(config, str(tmp_path / "run"))
  assert str(err.value).startswith(message)
  assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
  ("field", "value", "message"),
  [
    (
      "batch_size",
      1,
      "config.batch_size: expected at least 2 pairs, got 1 (a batch of one pair holds no "
      "negative: every ranking loss would be 0)",
    ),
    (
      "optimizer.decay_epochs",
      (-1,),
      "config.optimizer.decay_epochs: expected whole numbers >= 1 (the epochs after which "
      "the learning rate decays), got -1",
    ),
    (
      "optimizer.decay_epochs",
      (3, 0),
      "config.optimizer.decay_epochs: expected whole numbers >= 1 (the epochs after which "
      "the learning rate decays), got 0",
    ),
    (
      "optimizer.decay_epochs",
      (2.5,),
      "config.optimizer.decay_epochs: expected whole numbers >= 1 (the epochs after which "
      "the learning rate decays), got 2.5",
    ),
  ],
  ids=["batch of one", "negative decay epoch", "decay at epoch 0", "fractional decay epoch"],
)
def test_settings_that_cannot_learn_are_refused_before_anything_is_written(
  tmp_path, field, value, message
):
  """Settings that run but cannot learn (a batch without a negative, a decay from the first
  step) are one line, before the workdir is made."""
  config = default.get_config()
  group, _, name = field.rpartition(".")
  with config.ignore_type():
    (config[group] if group else config)[name] = value
  with pytest.raises(ValueError) as err:
    experiment.train_and_evaluate(config, str(tmp_path / "run"))
  assert str(err.value) == message
  assert os.listdir(tmp_path) == []


def test_a_batch_of_one_is_one_line_from_the_console_script(tmp_path):
  proc = _jitr_train(
    f"--config={REPO / 'configs' / 'default.py'}",
    f"--workdir={tmp_path / 'run'}",
    "--config.batch_size=1",
    cwd=tmp_path,
  )
  _, err = proc.communicate(timeout=300)
  assert proc.returncode == 1, err[-2000:]
  assert err.strip().splitlines() == [
    "jitr-train: error: config.batch_size: expected at least 2 pairs, got 1 (a batch of one "
    "pair holds no negative: every ranking loss would be 0)"
  ]
  assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
  ("override", "problem"),
  [
    (
      "--config.batch_size=abc",
      "--config.batch_size=abc: invalid literal for int() with base 10: 'abc'",
    ),
    (
      "--config.modle.embed_dim=8",
      "--config.modle.embed_dim=8: unknown field 'modle' of config (valid fields: backend, "
      "batch_size, calibration, captions_per_image, compilation_cache, concepts, data_dir, "
      "dataset, distributed, estimators, eval_batch_size, eval_every_steps, eval_folds, "
      "grad_chunks, graded, "
      "image, "
      "init_from, karpathy, labelled, log_every_steps, loss, max_caption_len, model, num_epochs, "
      "optimizer, "
      "precomp_root, prefetch, query_chunks, seed, shapes_config, test_split, text, token_buckets, "
      "token_chunks, top_k, train_fraction, vocab_file, vocab_min_count, vocab_min_coverage)",
    ),
  ],
  ids=["wrong type", "unknown field"],
)
def test_a_bad_override_is_one_line(tmp_path, override, problem):
  proc = _jitr_train(
    f"--config={REPO / 'configs' / 'default.py'}",
    f"--workdir={tmp_path / 'run'}",
    override,
    cwd=tmp_path,
  )
  _, err = proc.communicate(timeout=300)
  assert proc.returncode == 1, err[-2000:]
  assert err.strip() == f"jitr-train: error: {problem}"
  assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
  ("dotted", "problem"),
  [
    (
      "model.dim",
      "unknown field 'dim' of config.model (valid fields: embed_dim, image, image_pooling, "
      "text, text_pooling, word_dim)",
    ),
    ("seed.x", "unknown field 'x' of config.seed (valid fields: none: it is a value, not a group)"),
    ("model.embed_dim", None),
    ("loss.smooth_ndcg.temperature", None),
  ],
)
def test_unknown_field_names_the_group_and_its_fields(dotted, problem):
  assert _cli.unknown_field(default.get_config(), dotted) == problem


def test_run_reporting_bad_input_gives_exit_1_and_one_line():
  def full():
    raise OSError(errno.ENOSPC, "disk full: could not write /x/metrics.json")

  with pytest.raises(SystemExit) as err:
    _cli.run_reporting_bad_input("jitr-train", full)
  assert (
    str(err.value.code)
    == "jitr-train: error: [Errno 28] disk full: could not write /x/metrics.json"
  )


def test_disk_full_while_writing_a_file_says_so_and_removes_the_temporary(tmp_path, monkeypatch):
  target = tmp_path / "config.json"
  target.write_text("old")
  real_fsync = os.fsync

  def no_space(fd):
    raise OSError(errno.ENOSPC, "No space left on device")

  monkeypatch.setattr(os, "fsync", no_space)
  with pytest.raises(OSError, match=r"disk full: could not write .*config.json") as err:
    fileio.write_text_atomic(target, "new")
  monkeypatch.setattr(os, "fsync", real_fsync)
  assert err.value.errno == errno.ENOSPC
  assert os.listdir(tmp_path) == ["config.json"] and target.read_text() == "old"


# ---------------------------------------------------------------- SIGTERM: save, exit 75, resume
def test_main_exits_with_the_preempted_status_when_stopped(monkeypatch):
  stopped = experiment.RunResult(finished=False, metrics={})
  monkeypatch.setattr(experiment, "train_and_evaluate", lambda config, workdir, **_: stopped)
  monkeypatch.setattr(train, "_CONFIG", type("C", (), {"value": default.get_config()})())
  monkeypatch.setattr(train, "_WORKDIR", type("W", (), {"value": "/nonexistent"})())
  monkeypatch.setattr(train, "_ALLOW_CHANGED_INPUTS", type("A", (), {"value": False})())
  monkeypatch.setattr(train, "_INPUT_SHA256", type("S", (), {"value": []})())
  with pytest.raises(SystemExit) as err:
    train.main()
  assert err.value.code == train.PREEMPTED_EXIT_STATUS == 75


@pytest.mark.slow
def test_sigterm_saves_exits_75_and_a_rerun_resumes(tmp_path):
  write_precomp(tmp_path / "data", n_images=40)
  args = [
    f"--config={REPO / 'configs' / 'default.py'}",
    f"--workdir={tmp_path / 'run'}",
    "--config.dataset=f30k_precomp",
    f"--config.precomp_root={tmp_path / 'data'}",
    f"--config.data_dir={tmp_path / 'cache'}",
    "--config.graded={}",  # the triplet alone: no relevance to precompute
    "--config.loss={'triplet': {'weight': 1.0, 'margin': 0.2}}",
    "--config.compilation_cache=False",
    "--config.batch_size=8",
    "--config.eval_batch_size=8",
    "--config.model.embed_dim=8",
    "--config.model.word_dim=8",
    "--config.log_every_steps=1",
    "--config.token_buckets=()",  # one caption width: the step compiles once
  ]
  proc = _jitr_train(*args, "--config.num_epochs=1000", cwd=tmp_path)
  latest_dir = tmp_path / "run" / "checkpoints" / "latest"
  deadline = time.monotonic() + 240

  def first_epoch_saved() -> bool:
    # orbax renames a step's folder to its number once written: the loop, and its signal
    # handlers, run; the stop comes at a step boundary of the second epoch
    return latest_dir.exists() and any(s.name.isdigit() for s in latest_dir.iterdir())

  while not first_epoch_saved() and time.monotonic() < deadline:
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    time.sleep(0.2)
  proc.send_signal(signal.SIGTERM)
  _, err = proc.communicate(timeout=240)
  assert proc.returncode == 75, err[-3000:]
  assert "run again to resume" in err
  latest = os.listdir(tmp_path / "run" / "checkpoints" / "latest")
  saved = max(int(s) for s in latest if s.isdigit())
  assert saved > 25  # a step of the second epoch (25 steps each)
  config_json = (tmp_path / "run" / "config.json").read_bytes()
  # The re-run (a shorter schedule, which may end at once) restores that step and finishes
  # its epoch: 200 captions / 8 = 25 steps per epoch.
  epochs = saved // 25 + 1
  proc = _jitr_train(*args, f"--config.num_epochs={epochs}", cwd=tmp_path)
  _, err = proc.communicate(timeout=300)
  assert proc.returncode == 0, err[-3000:]
  assert json.loads((tmp_path / "run" / "metrics.json").read_text())["full/rsum"] > 0
  # config.json describes the run: the saved config with the new num_epochs
  assert json.loads((tmp_path / "run" / "config.json").read_text()) == {
    **json.loads(config_json),
    "num_epochs": epochs,
  }


@pytest.mark.parametrize(
  ("source", "message"),
  [
    (
      b'X = "caf\xe9"\n',
      "bad.py:1: cannot load the config file: not UTF-8 ('utf-8' codec can't decode byte 0xe9 "
      "in position 3: unexpected end of data), column 11",
    ),
    (b"import ml_collections\n\ndef get_config(:\n", "bad.py:3: cannot load the config file: "),
  ],
)
def test_a_config_file_that_does_not_compile_is_named_with_its_line(tmp_path, source, message):
  (tmp_path / "bad.py").write_bytes(source)
  try:
    compile(source, "bad.py", "exec")
  except SyntaxError as err:
    assert _cli.config_file_error(err).startswith(message)
  else:
    raise AssertionError("compiled")


@pytest.mark.parametrize("count", ["captions_per_image", "images_per_shard", "top_k"])
def test_precompute_refuses_a_zero_count_before_writing(tmp_path, count):
  (tmp_path / "caps.txt").write_text("a dog\nb cat\n")
  exe = shutil.which("jitr-precompute") or str(
    pathlib.Path(sys.executable).with_name("jitr-precompute")
  )
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  out = subprocess.run(
    [exe, "--captions=caps.txt", "--estimator=cider", "--out=rel", f"--{count}=0"],
    cwd=tmp_path,
    env=env,
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert out.returncode == 1
  assert out.stderr == f"jitr-precompute: error: --{count}=0: 0 is not a positive integer\n"
  assert sorted(os.listdir(tmp_path)) == ["caps.txt"]


@pytest.mark.parametrize(
  ("app", "override", "problem"),
  [
    (
      "jitr-precompute",
      "--config.estimators.lsa.kk=3",
      "unknown field 'kk' of config.estimators.lsa (valid fields: aggregate, k, n_iter, seed)",
    ),
    (
      "jitr-relevance-agreement",
      "--config.estimators.bm25.k=1",
      "unknown field 'bm25' of config.estimators (valid fields: cider, lsa, sentence, tokens)",
    ),
  ],
)
def test_relevance_apps_name_an_unknown_estimator_setting_in_one_line(
  tmp_path, app, override, problem
):
  exe = shutil.which(app) or str(pathlib.Path(sys.executable).with_name(app))
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  args = ["--captions=caps.txt", "--judgments=j.txt", "--estimator=lsa", "--out=rel", override]
  if app == "jitr-relevance-agreement":
    args.remove("--estimator=lsa")
    args.remove("--out=rel")
  out = subprocess.run(
    [exe, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
  )
  assert out.returncode == 1
  assert out.stderr.strip() == f"{app}: error: {override}: {problem}"
  assert os.listdir(tmp_path) == []


@pytest.mark.slow  # 20 s; tests/relevance/test_records.py has the fast unit
def test_a_corrupt_relevance_shard_is_rewritten_by_the_next_run(tmp_path):
  """jitr-train computes its relevance records on first use; a shard corrupted at the same
  size no longer counts as complete, so the next run's data loading rewrites it."""
  write_precomp(tmp_path / "data")
  config = precomp_config(tmp_path / "data")
  config.graded = ml_collections.ConfigDict({"relevance": "vectors:lsa"})
  config.estimators.lsa.k = 4
  first = experiment.load_data(config, config.data_dir).splits["train"].vectors["lsa"]
  (records,) = (tmp_path / "data" / "cache" / "relevance").rglob("relevance.json")
  before = snapshot(records.parent)
  (shard,) = records.parent.glob("*.tfrecord")
  data = bytearray(shard.read_bytes())
  data[len(data) // 3] ^= 0x55
  shard.write_bytes(bytes(data))
  again = experiment.load_data(config, config.data_dir).splits["train"].vectors["lsa"]
  np.testing.assert_array_equal(again, first)
  assert snapshot(records.parent) == before  # the shard is back, byte for byte


def test_missing_config_file_is_one_line(tmp_path):
  from tests.apps.test_one_line_faults import shipped_suffix

  proc = _jitr_train(
    f"--config={tmp_path / 'nope.py'}:abc", f"--workdir={tmp_path / 'run'}", cwd=tmp_path
  )
  _, err = proc.communicate(timeout=300)
  assert proc.returncode == 1, err[-2000:]
  assert err.strip() == (
    f"jitr-train: error: --config={tmp_path / 'nope.py'}:abc: could not load the config file: "
    f"[Errno 2] No such file or directory: '{tmp_path / 'nope.py'}'" + shipped_suffix()
  )
  assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- --help of every app
_APPS = {  # console script -> the module that defines its flags
  "jitr-train": "train",
  "jitr-eval": "evaluate",
  "jitr-precompute": "precompute",
  "jitr-relevance-agreement": "agreement",
  "jitr-relevance-quality": "relevance_quality",
  "jitr-relevance-calibrate": "calibrate",
  "jitr-check-data": "check_data",
  "jitr-import": "import_official",
  "jitr-tables": "tables",
}


def _defined_flags(module: str) -> dict[str, str]:
  """``{flag name: help text}`` of every flag that ``jitr/apps/MODULE.py`` defines (read
  from its source: importing several apps would define ``--config`` twice)."""
  import ast

  tree = ast.parse((REPO / "jitr" / "apps" / f"{module}.py").read_text())
  found = {}
  for node in ast.walk(tree):
    if not isinstance(node, ast.Call):
      continue
    func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    texts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    texts += [k.value.value for k in node.keywords if k.arg == "help"]
    if func.startswith("DEFINE_") and func != "DEFINE_config_dict":
      found[texts[0]] = texts[-1]
    elif func == "workdir_flag":
      found["workdir"] = texts[-1]
    elif func == "config_dict_flag":
      found["config"] = texts[-1]
  return found


@pytest.mark.parametrize("app", sorted(_APPS))
def test_help_of_every_app_lists_its_own_flags_with_their_help(app):
  exe = shutil.which(app) or str(pathlib.Path(sys.executable).with_name(app))
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  out = subprocess.run([exe, "--help"], env=env, capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr
  text = " ".join((out.stdout + out.stderr).split())  # absl wraps the help text
  defined = _defined_flags(_APPS[app])
  assert len(defined) >= 2, defined  # jitr-train: --config and --workdir
  for name, help_text in defined.items():
    assert f"--{name}:" in text or f"--[no]{name}:" in text, (name, text)
    assert " ".join(help_text.split()) in text, (name, help_text)
  for markup in ("``", ":func:", ":class:", ":mod:", ":data:", ":meth:"):  # plain text only
    assert markup not in out.stdout, (markup, out.stdout)
  assert out.stdout.startswith(f"{app}: ") and out.stderr == ""
  if "config" in defined and app not in ("jitr-train", "jitr-import"):  # a built-in config
    lines = out.stdout.splitlines()
    start = lines.index("--config fields (their defaults; --config.FIELD=VALUE overrides one):")
    assert lines[start + 1 : start + 5] == [
      "  estimators:",
      "    cider:",
      "      n: 4",
      "      sigma: 6.0",
    ]
    assert "      k: 400" in lines[start:]  # configs/default.py's lsa.k is 64; the apps' 400
