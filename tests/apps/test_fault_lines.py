"""Faults a new user meets that were tracebacks or wrong advice, each now one line
``APP: error: ...`` (exit status 1; Ctrl-C: 130) with nothing written or changed: sizes of
the model group below 1, a seed JAX cannot take, ``stop_check_every_steps=0``, an ``.npz``
archive under a precomp ``.npy`` name, a relevance header whose ``top_k`` is a string, a
torch device PyTorch cannot use, a checkpoint holding objects jitr does not unpickle, a
damaged ``init_from`` source, Ctrl-C while a console script imports JAX, a report write
that fails, storage URLs that cannot be reached.

The in-process cases end the way an app does: ``run_reporting_bad_input`` turns the
library's ``ValueError`` / ``OSError`` into ``SystemExit("APP: error: ...")``, which Python
prints as that one line with exit status 1.
"""

import errno
import json
import os
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest

from configs import default
from jitr import experiment, fileio, folder_swap, paths
from jitr.apps import _cli, train
from jitr.evaluation import report
from jitr.training.checkpoint_manifest import write_manifest
from tests.apps.test_faults import REPO
from tests.fake_bucket import fake_bucket
from tests.file_fixtures import precomp_config, snapshot, write_precomp


def _one_line_exit(name: str, body) -> str:
  """The line ``body`` ends the app ``name`` with (exit status 1: ``SystemExit`` with a
  message); one line, no traceback."""
  with pytest.raises(SystemExit) as ended:
    _cli.run_reporting_bad_input(name, body)
  line = ended.value.code
  assert isinstance(line, str) and "\n" not in line, line  # a string exits with status 1
  return line


# ---------------------------------------------------------------- settings no run can use
@pytest.mark.parametrize(
  ("field", "value", "problem"),
  [
    (
      "model.embed_dim",
      0,
      "config.model.embed_dim: expected a whole number >= 1, got 0 (a size or count of the "
      "'vse' network)",
    ),
    (
      "model.embed_dim",
      -16,
      "config.model.embed_dim: expected a whole number >= 1, got -16 (a size or count of the "
      "'vse' network)",
    ),
    (
      "seed",
      99999999999999999999,
      "config.seed: expected a whole number in [0, 4294967295] (JAX seeds its random keys "
      "with 32 bits), got 99999999999999999999",
    ),
    (
      "distributed.stop_check_every_steps",
      0,
      "config.distributed.stop_check_every_steps: expected a whole number >= 1, got 0",
    ),
  ],
  ids=["embed_dim 0", "embed_dim -16", "huge seed", "stop check 0"],
)
def test_a_setting_no_run_can_use_is_one_line_before_anything_is_written(
  tmp_path, monkeypatch, field, value, problem
):
  config = default.get_config()
  group, _, name = field.rpartition(".")
  (config[group] if group else config)[name] = value
  monkeypatch.setattr(train, "_CONFIG", types.SimpleNamespace(value=config, name="config"))
  monkeypatch.setattr(train, "_WORKDIR", types.SimpleNamespace(value=str(tmp_path / "run")))
  assert _one_line_exit("jitr-train", train.main) == f"jitr-train: error: {problem}"
  assert os.listdir(tmp_path) == []  # no workdir, no data folder beside it


def test_layer_and_step_counts_may_be_zero_and_sizes_may_not():
  from jitr.models.model_settings import check_model_settings

  check_model_settings({"name": "sgr", "sgr_step": 0})  # SGR without reasoning steps
  check_model_settings({"name": "vsrn", "gcn_layers": 0})
  with pytest.raises(ValueError, match=r"^config.model.sgr_step: expected a whole number >= 0"):
    check_model_settings({"name": "sgr", "sgr_step": -1})
  with pytest.raises(ValueError, match=r"^config.model.block_size: expected a whole number >= 1"):
    check_model_settings({"name": "saf", "block_size": 0})


# ---------------------------------------------------------------- files that are not what they say
def test_an_npz_archive_under_a_precomp_npy_name_names_the_file(tmp_path):
  from jitr.data.precomp_check import check_precomp_folder

  folder = write_precomp(tmp_path / "data")
  with open(folder / "train_ims.npy", "wb") as f:  # np.savez's output, under the .npy name
    np.savez(f, features=np.zeros((20, 36, 2048), np.float32))
  before = snapshot(tmp_path)
  line = _one_line_exit(
    "jitr-check-data", lambda: check_precomp_folder(tmp_path / "data", "f30k_precomp")
  )
  assert line == (
    f"jitr-check-data: error: {folder / 'train_ims.npy'}: a .npz archive (np.savez output, "
    "holding 'features'), not a .npy array; expected float [N, 36, 2048] features saved with "
    "np.save"
  )
  assert snapshot(tmp_path) == before


CAPTIONS = [
  "a dog runs on the grass",
  "a brown dog runs",
  "a dog on grass",
  "the dog is running",
  "a dog outside",
  "a red ball on a mat",
  "a ball on the mat",
  "a red ball",
  "the mat holds a ball",
  "a small red ball",
]


@pytest.mark.parametrize(
  ("field", "value", "expected"),
  [
    ("top_k", "100", "a whole number >= 0 or null (the length of the top-k lists)"),
    ("top_k", -3, "a whole number >= 0 or null (the length of the top-k lists)"),
    ("vectors", "yes", "true or false"),
  ],
)
def test_a_relevance_header_contents_field_of_the_wrong_type_names_the_file_and_field(
  tmp_path, field, value, expected
):
  from jitr.data.relevance_reader import load_relevance_table
  from jitr.relevance.captions_io import read_precomp_captions
  from jitr.relevance.cider_estimator import CiderEstimator
  from jitr.relevance.records import RecordsWriting, write_relevance_records

  (tmp_path / "caps.txt").write_text("\n".join(CAPTIONS) + "\n")
  captions = read_precomp_captions(str(tmp_path / "caps.txt"))
  out = tmp_path / "rel"
  write_relevance_records(
    str(out), captions, CiderEstimator(), writing=RecordsWriting(top_k=3, log=lambda _: None)
  )
  header = json.loads((out / "relevance.json").read_text())
  header["contents"][field] = value
  (out / "relevance.json").write_text(json.dumps(header))
  before = snapshot(tmp_path)
  line = _one_line_exit("jitr-train", lambda: load_relevance_table(str(out)))
  assert line == (
    f"jitr-train: error: {out / 'relevance.json'}: field 'contents.{field}' is {value!r}, "
    f"expected {expected} (a damaged header: delete the folder and re-run jitr-precompute)"
  )
  assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- PyTorch
def test_a_torch_device_pytorch_cannot_use_is_one_line(monkeypatch, capsys):
  torch = pytest.importorskip("torch")
  if torch.cuda.is_available():
    pytest.skip("this PyTorch can use cuda")
  from tests.bench_tables import load_script

  bench = load_script("bench_torch_bridge")
  monkeypatch.setattr(sys, "argv", ["bench_torch_bridge.py", "--torch_device=cuda"])
  with pytest.raises(SystemExit) as ended:
    bench.main()
  assert ended.value.code == (
    f"bench_torch_bridge.py: error: --torch_device=cuda: PyTorch {torch.__version__} cannot "
    "use it (Torch not compiled with CUDA enabled); expected cpu, or a GPU this PyTorch was "
    "built for (cuda, cuda:1, ...)"
  )
  assert capsys.readouterr().out == ""  # nothing printed before the refusal


class Payload:
  """An arbitrary class whose instance a checkpoint may hold."""


class CallsSystem:
  """Pickled as a call of ``os.system``; weights-only loading never makes that call."""

  def __reduce__(self):
    return (os.system, ("echo unpickled",))


@pytest.mark.parametrize(
  ("payload", "name"),
  [(Payload(), f"{__name__}.Payload"), (CallsSystem(), f"{os.system.__module__}.system")],
  ids=["class instance", "blocked function"],
)
def test_a_checkpoint_holding_objects_jitr_does_not_unpickle_says_so(tmp_path, payload, name):
  torch = pytest.importorskip("torch")
  from jitr.models.official_checkpoint import load_checkpoint

  path = tmp_path / "model_best.pth.tar"
  torch.save({"model": {"w": torch.zeros(2)}, "extra": payload}, path)
  before = snapshot(tmp_path)
  line = _one_line_exit("jitr-import", lambda: load_checkpoint(path))
  assert line == (
    f"jitr-import: error: {path}: holds objects jitr does not unpickle (refused to unpickle "
    f"{name!r}); an official checkpoint holds only tensors, containers and argparse.Namespace; "
    "the file is intact, but not such a checkpoint"
  )
  assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- another run's damaged checkpoint
def test_a_damaged_init_from_source_is_named_and_never_to_be_deleted(tmp_path):
  """A source whose best checkpoint fails its manifest is refused before the data is
  loaded or anything is written, naming the damaged file; the advice is about what to give
  instead (the source is another run's)."""
  config = precomp_config(tmp_path / "data")
  source = tmp_path / "source"
  source.mkdir()
  fileio.write_text_atomic(source / "config.json", config.to_json_best_effort(indent=2))
  step = source / "checkpoints" / "best" / "6"
  (step / "default").mkdir(parents=True)
  (step / "default" / "params").write_bytes(bytes(range(256)))
  write_manifest(str(step))
  (step / "default" / "params").write_bytes(bytes(range(255, -1, -1)))  # same size, garbled
  before = snapshot(tmp_path)
  config.init_from = str(source)
  line = _one_line_exit(
    "jitr-train", lambda: experiment.train_and_evaluate(config, str(tmp_path / "run"))
  )
  assert line.startswith(
    f"jitr-train: error: config.init_from: {source}: its checkpoint is damaged: "
    f"{step.parent}: no checkpoint can be restored (step 6 ({step / 'default' / 'params'}: "
    "sha256 differs from jitr_manifest.json"
  ), line
  assert line.endswith(
    "; point config.init_from at a jitr-train workdir with an intact checkpoint (this run "
    f"only reads {source}: it is the other run's, left as it is)"
  ), line
  assert "delete" not in line
  assert snapshot(tmp_path) == before
  assert sorted(os.listdir(tmp_path)) == ["source"]  # no run folder, no data cache


# ---------------------------------------------------------------- Ctrl-C while JAX imports
# Loaded first by the child (PYTHONPATH): when the app imports JAX, a garbage-collector
# callback sends this process SIGINT, where JAX's own callback would receive a Ctrl-C
# (an exception there cannot propagate), at a known instruction whatever the machine's
# load; the import then waits up to 30 s, so a Ctrl-C lost in the callback would let the
# app go on (and end otherwise) instead of being raised here.
CTRL_C_IN_JAX_IMPORT = """
import gc, importlib.abc, os, signal, sys, time


class CtrlCWhileJaxImports(importlib.abc.MetaPathFinder):
  def find_spec(self, name, path=None, target=None):
    if name != "jax":
      return None
    sys.meta_path.remove(self)
    armed = [True]

    def ctrl_c(phase, info):
      if armed and phase == "start":
        armed.clear()
        os.kill(os.getpid(), signal.SIGINT)

    gc.callbacks.insert(0, ctrl_c)
    try:
      gc.collect()
    finally:
      gc.callbacks.remove(ctrl_c)
    for _ in range(3000):  # short sleeps: a signal that came before one is raised after it
      time.sleep(0.01)
    return None


sys.meta_path.insert(0, CtrlCWhileJaxImports())
"""


# The app with SIGINT's default action, as a terminal's command starts: a background job of
# a shell without job control (a CI script's `cmd &`) ignores SIGINT, Python keeps it
# ignored, and exec keeps both (set here in a process of its own, not in a forked child of
# this multithreaded one).
SIGINT_DEFAULT_THEN_EXEC = (
  "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
  "os.execv(sys.argv[1], sys.argv[1:])"
)


@pytest.mark.parametrize(
  ("app", "args", "line"),
  [
    (  # JAX loads while the module imports, before the app runs
      "jitr-precompute",
      ("--captions=caps.txt", "--estimator=cider", "--out=rel"),
      "jitr-precompute: interrupted (Ctrl-C)",
    ),
    (  # JAX loads in main, once the app runs
      "jitr-train",
      (f"--config={REPO / 'configs' / 'default.py'}", "--workdir=run"),
      f"jitr-train: {train.INTERRUPTED_LINE}",
    ),
  ],
  ids=["while the module imports", "in main"],
)
def test_ctrl_c_while_jax_imports_is_one_line_and_status_130(tmp_path, app, args, line):
  (tmp_path / "hook").mkdir()
  (tmp_path / "hook" / "sitecustomize.py").write_text(CTRL_C_IN_JAX_IMPORT)
  (tmp_path / "cwd").mkdir()
  (tmp_path / "cwd" / "caps.txt").write_text("\n".join(CAPTIONS) + "\n")
  exe = shutil.which(app) or os.path.join(os.path.dirname(sys.executable), app)
  env = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(tmp_path / "hook"), str(REPO)]),
    "TF_CPP_MIN_LOG_LEVEL": "3",
  }
  out = subprocess.run(
    [sys.executable, "-c", SIGINT_DEFAULT_THEN_EXEC, exe, *args],
    cwd=tmp_path / "cwd",
    env=env,
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert out.returncode == 130, out.stderr[-3000:]
  assert out.stderr == line + "\n"
  assert os.listdir(tmp_path / "cwd") == ["caps.txt"]


# ---------------------------------------------------------------- a report whole or not at all
def _previous_report(folder) -> dict[str, str]:
  """A report folder as the last evaluation left it (with its query panel); its snapshot."""
  report.write_report(str(folder), {"full/rsum": 100.0, "full/i2t/R@1": 40.0}, title="step 6")
  (folder / "queries.png").write_bytes(b"the panel of step 6")
  return snapshot(folder)


def test_a_report_write_that_fails_leaves_the_previous_report_as_it_was(tmp_path, monkeypatch):
  out = tmp_path / "eval_test"
  before = _previous_report(out)
  metrics = {"full/rsum": 120.0, "full/i2t/R@1": 50.0, "full/i2t/R@5": 70.0}

  def full_disk(*args, **kwargs):  # the plots fill the disk, metrics.json already written
    raise OSError(errno.ENOSPC, "No space left on device")

  monkeypatch.setattr(report.plots_lib, "plot_curves", full_disk)
  with pytest.raises(SystemExit) as ended:
    _cli.run_reporting_bad_input("jitr-eval", lambda: _write_in(report.building(str(out)), metrics))
  assert ended.value.code == (
    f"jitr-eval: error: [Errno 28] disk full: could not write {out} (temporary file removed); "
    "free space and run the same command again"
  )
  monkeypatch.undo()
  with pytest.raises(KeyboardInterrupt):  # Ctrl-C half way: the same
    with report.building(str(out)) as folder:
      report.write_report(folder, metrics, title="step 12")
      raise KeyboardInterrupt
  assert snapshot(out) == before
  assert os.listdir(tmp_path) == ["eval_test"]  # no temporary folder left beside it
  _write_in(report.building(str(out)), metrics)  # complete: the new report, and only it
  assert json.loads((out / "metrics.json").read_text())["full/rsum"] == 120.0
  assert not (out / "queries.png").exists()
  assert os.listdir(tmp_path) == ["eval_test"]


def test_a_folder_is_replaced_whole_where_paths_cannot_be_exchanged(tmp_path, monkeypatch):
  """Without renameat2's exchange (not Linux, or a file system without it) the old folder
  is renamed aside first; the result is the same."""
  out = tmp_path / "eval_test"
  _previous_report(out)
  monkeypatch.setattr(folder_swap, "exchange_paths", lambda a, b: False)
  _write_in(report.building(str(out)), {"full/rsum": 7.0})
  assert json.loads((out / "metrics.json").read_text()) == {"full/rsum": 7.0}
  assert not (out / "queries.png").exists() and os.listdir(tmp_path) == ["eval_test"]


def _write_in(building, metrics) -> None:
  with building as folder:
    report.write_report(folder, metrics, title="step 12")


def test_a_report_in_a_bucket_is_uploaded_whole_with_metrics_json_last(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)  # a URL handed to os would become a folder here
  before = _previous_report(tmp_path / "bucket" / "run" / "eval_test")
  metrics = {"full/rsum": 120.0, "full/i2t/R@1": 50.0}
  with fake_bucket(tmp_path / "bucket") as bucket:
    with pytest.raises(KeyboardInterrupt), report.building(f"{bucket}/run/eval_test") as folder:
      report.write_report(folder, metrics)
      raise KeyboardInterrupt  # built locally: the bucket is untouched
    assert snapshot(tmp_path / "bucket" / "run" / "eval_test") == before
    uploads = []
    real_open = paths.open
    monkeypatch.setattr(
      paths, "open", lambda p, *a, **k: uploads.append(p) or real_open(p, *a, **k)
    )
    _write_in(report.building(f"{bucket}/run/eval_test"), metrics)
  assert uploads[-1] == "gs://bucket/run/eval_test/metrics.json"  # the mark of a whole report
  out = tmp_path / "bucket" / "run" / "eval_test"
  assert sorted(os.listdir(out)) == sorted(os.path.basename(u) for u in uploads)
  assert "queries.png" not in os.listdir(out)  # the previous report's panel is gone
  assert json.loads((out / "metrics.json").read_text())["full/rsum"] == 120.0
  assert sorted(os.listdir(tmp_path)) == ["bucket"]


# ---------------------------------------------------------------- storage URLs
NO_S3 = (
  "no file system for s3:// URLs (S3): with TensorFlow installed (as jitr[train] installs "
  "it) jitr, orbax and TFDS read and write URLs through TensorFlow's file systems, which "
  "serve gs:// only; use a gs:// bucket or a folder (a local copy, or the bucket mounted "
  "with s3fs-fuse or mountpoint-s3)"
)


def _train(workdir: str, **fields):
  """``train_and_evaluate`` of configs/default.py with ``fields`` set, in ``workdir``."""
  config = default.get_config()
  for name, value in fields.items():
    config[name] = value
  return lambda: experiment.train_and_evaluate(config, workdir)


def _check_data(root: str):
  from jitr.data.precomp_check import check_precomp_folder

  return lambda: check_precomp_folder(root, "f30k_precomp")


def _shapes(data_dir: str):
  from jitr.data.shapes import tfds as shapes_tfds

  return lambda: shapes_tfds.builder(data_dir, "tiny")


def _input(path: str):
  """What every app with a file or folder on its command line runs first (``App.inputs``:
  jitr-eval, jitr-precompute, the relevance apps, jitr-import)."""
  app = _cli.App("jitr-eval", __name__, inputs=lambda: [_cli.Input(path, "missing")])
  return lambda: app._checked_main(lambda: None)


@pytest.mark.parametrize(
  ("app", "call", "url"),
  [
    ("jitr-train", lambda: _train("s3://bucket/run"), "s3://bucket/run"),
    ("jitr-train", lambda: _train("run", data_dir="s3://bucket/tfds"), "s3://bucket/tfds"),
    ("jitr-check-data", lambda: _check_data("s3://bucket/data"), "s3://bucket/data/f30k_precomp"),
    ("jitr-relevance-quality", lambda: _shapes("s3://bucket/tfds"), "s3://bucket/tfds"),
    ("jitr-eval", lambda: _input("s3://bucket/run"), "s3://bucket/run"),
  ],
  ids=["train workdir", "train data_dir", "check-data", "shapes data_dir", "app inputs"],
)
def test_a_url_scheme_without_a_file_system_is_one_line(tmp_path, monkeypatch, app, call, url):
  pytest.importorskip("tensorflow")  # epath's TensorFlow backend: no s3:// file system
  monkeypatch.chdir(tmp_path)  # a URL handed to os would become a folder here
  assert _one_line_exit(app, call()) == f"{app}: error: {url}: {NO_S3}"
  assert os.listdir(tmp_path) == []


# What TensorFlow's Cloud Storage file system raises without credentials.
NO_CREDENTIALS = (
  'Error executing an HTTP request: HTTP response code 401 with body \'{"error": '
  '{"code": 401, "message": "Anonymous caller does not have storage.objects.get access"}}\''
  "\n\t when reading metadata of gs://bucket/run"
)
# Loaded first by the child: gs://bucket (served from ROOT) answers every request as a
# bucket does to a caller without credentials.
NO_CREDENTIALS_HOOK = """
import tensorflow as tf
from etils.epath import gpath
from tests.fake_bucket import fake_bucket

_SERVED = fake_bucket(ROOT)
_SERVED.__enter__()


def _refuse(orig, path, *args, **kwargs):
  raise tf.errors.PermissionDeniedError(None, None, MESSAGE)


for _backend in set(gpath._PREFIX_TO_BACKEND.values()):
  _backend.mock_fns.update(dict.fromkeys(_backend.mock_fns, _refuse))
"""
GS_ADVICE = (
  "check the network and the credentials (gcloud auth application-default login, or "
  "GOOGLE_APPLICATION_CREDENTIALS=KEY.json)"
)


def test_a_bucket_without_credentials_is_one_line_from_the_app(tmp_path):
  (tmp_path / "hook").mkdir()
  hook = NO_CREDENTIALS_HOOK.replace("ROOT", repr(str(tmp_path / "bucket")))
  hook = hook.replace("MESSAGE", repr(NO_CREDENTIALS))
  (tmp_path / "hook" / "sitecustomize.py").write_text(hook)
  (tmp_path / "cwd").mkdir()
  exe = shutil.which("jitr-eval") or os.path.join(os.path.dirname(sys.executable), "jitr-eval")
  env = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(tmp_path / "hook"), str(REPO)]),
    "TF_CPP_MIN_LOG_LEVEL": "3",
  }
  out = subprocess.run(
    [exe, "--workdir=gs://bucket/run"],
    cwd=tmp_path / "cwd",
    env=env,
    capture_output=True,
    text=True,
    timeout=120,
  )
  assert out.returncode == 1, out.stderr[-3000:]
  first = NO_CREDENTIALS.splitlines()[0]
  assert out.stderr == (
    "jitr-eval: error: gs://bucket/run: could not reach Cloud Storage while checking whether "
    f"it exists (PermissionDeniedError: {first}); {GS_ADVICE}\n"
  )
  assert os.listdir(tmp_path / "cwd") == [] and os.listdir(tmp_path / "bucket") == []


class DefaultCredentialsError(Exception):
  """Stands in for google.auth's error of a machine without credentials (gcsfs raises it)."""


DefaultCredentialsError.__module__ = "google.auth.exceptions"


def test_every_path_function_on_an_unreachable_bucket_is_one_storage_error(tmp_path):
  from etils.epath import gpath

  def refuse(orig, path, *args, **kwargs):
    raise DefaultCredentialsError(
      "Your default credentials were not found. To set up Application Default Credentials, "
      "see https://cloud.google.com/docs/authentication/external/set-up-adc\nmore"
    )

  calls = {
    "exists": lambda u: paths.exists(u),
    "isdir": lambda u: paths.isdir(u),
    "isfile": lambda u: paths.isfile(u),
    "getsize": lambda u: paths.getsize(u),
    "listdir": lambda u: paths.listdir(u),
    "makedirs": lambda u: paths.makedirs(u),
    "remove": lambda u: paths.remove(u),
    "rmtree": lambda u: paths.rmtree(u),
    "glob": lambda u: paths.glob(u, "*"),
    "walk": lambda u: list(paths.walk(u)),
    "open": lambda u: paths.open(u, "rb"),
    "check_reachable": lambda u: paths.check_reachable(u),
  }
  with fake_bucket(tmp_path / "bucket") as bucket:
    for backend in set(gpath._PREFIX_TO_BACKEND.values()):
      backend.mock_fns.update(dict.fromkeys(backend.mock_fns, refuse))
    for name, call in calls.items():
      with pytest.raises(paths.StorageError) as err:
        call(f"{bucket}/run")
      assert str(err.value).startswith("gs://bucket/run: could not reach Cloud Storage while "), (
        name
      )
      assert str(err.value).endswith(
        "(DefaultCredentialsError: Your default credentials were not found. To set up "
        "Application Default Credentials, see https://cloud.google.com/docs/authentication/"
        f"external/set-up-adc); {GS_ADVICE}"
      ), (name, str(err.value))
  assert os.listdir(tmp_path / "bucket") == []


def test_without_tensorflow_a_scheme_names_the_package_that_provides_it():
  pytest.importorskip("fsspec")
  from etils.epath import backend as backend_lib

  for scheme, package in (("gs", "gcsfs"), ("s3", "s3fs"), ("az", "adlfs")):
    try:
      __import__(package)
      continue  # installed here: the file system exists
    except ImportError:
      pass
    url = f"{scheme}://bucket/run"
    problem = paths.file_system_problem(url, backend_lib.fsspec_backend)
    assert problem.startswith(f"{url}: no file system for {scheme}:// URLs ("), problem
    assert problem.endswith(
      f"etils.epath reads them through fsspec, whose {scheme}:// file system is the package "
      f"{package}, which is not installed; install it with: pip install {package}"
    )
