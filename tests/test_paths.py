"""jitr.paths: local paths and ``gs://`` URLs answer alike, and jitr's own readers and
writers reach a bucket only through it (a fake bucket on a local folder, tests/fake_bucket)."""

from __future__ import annotations

import ast
import contextlib
import os
import pathlib
import tempfile

import numpy as np
import pytest

from jitr import fileio, paths
from tests.fake_bucket import fake_bucket


@pytest.fixture
def bucket(tmp_path, monkeypatch):
  """``gs://bucket`` served from ``tmp_path/bucket``; the working directory is an empty
  ``tmp_path/cwd``, which must stay empty (a URL handed to ``os`` would land there)."""
  cwd = tmp_path / "cwd"
  cwd.mkdir()
  monkeypatch.chdir(cwd)
  with fake_bucket(tmp_path / "bucket") as url:
    yield url, tmp_path / "bucket"
  assert os.listdir(cwd) == [], "a gs:// path was handed to os: it became a local folder"


def _build_tree(root: str) -> None:
  """The same small tree through jitr.paths, under a local folder or a URL."""
  paths.makedirs(os.path.join(root, "run", "checkpoints", "10"))
  paths.makedirs(os.path.join(root, "run", "checkpoints", "20"))
  paths.makedirs(os.path.join(root, "run", "checkpoints", "20"))  # already there: fine
  with paths.open(os.path.join(root, "run", "config.json"), "w", encoding="utf-8") as f:
    f.write('{"seed": 1}\n')
  with paths.open(os.path.join(root, "run", "checkpoints", "10", "a.bin"), "wb") as f:
    f.write(b"\0" * 7)
  with paths.open(os.path.join(root, "run", "x.tmp-host-1-ab"), "wb") as f:
    f.write(b"partial")


def _answers(root: str) -> dict:
  """What jitr.paths says about the tree, with ``root`` cut from every path."""
  run = os.path.join(root, "run")
  cut = lambda p: os.path.relpath(p, root) if not paths.is_url(p) else p[len(root) + 1 :]
  return {
    "exists": [paths.exists(os.path.join(run, n)) for n in ("config.json", "nope", "checkpoints")],
    "isdir": [paths.isdir(os.path.join(run, n)) for n in ("config.json", "nope", "checkpoints")],
    "isfile": [paths.isfile(os.path.join(run, n)) for n in ("config.json", "nope", "checkpoints")],
    "size": paths.getsize(os.path.join(run, "checkpoints", "10", "a.bin")),
    "listdir": sorted(paths.listdir(run)),
    "steps": sorted(paths.listdir(os.path.join(run, "checkpoints"))),
    "glob": [cut(p) for p in paths.glob(run, "*.tmp-*")],
    "walk": sorted((cut(f), sorted(d), sorted(n)) for f, d, n in paths.walk(run)),
    "text": paths.open(os.path.join(run, "config.json"), encoding="utf-8").read(),
  }


def test_a_url_is_recognised_and_kept_absolute_as_it_is():
  assert paths.is_url("gs://b/run") and paths.is_url("s3://b") and paths.is_url("az://c/x")
  assert not paths.is_url("runs/gs://b") and not paths.is_url("/tmp/run")
  assert paths.absolute("gs://b/runs/a/") == "gs://b/runs/a"
  assert paths.absolute("run") == os.path.join(os.getcwd(), "run")
  # what os.path.abspath would have made of it:
  assert os.path.abspath("gs://b/run") == os.path.join(os.getcwd(), "gs:/b/run")


def test_a_bucket_answers_as_a_local_folder_does(bucket, tmp_path):
  url, root = bucket
  local = str(tmp_path / "local")
  _build_tree(local)
  _build_tree(url)
  assert _answers(url) == _answers(local)
  assert (root / "run" / "checkpoints" / "10" / "a.bin").read_bytes() == b"\0" * 7
  assert _answers(local)["walk"] == [
    ("run", ["checkpoints"], ["config.json", "x.tmp-host-1-ab"]),
    (os.path.join("run", "checkpoints"), ["10", "20"], []),
    (os.path.join("run", "checkpoints", "10"), [], ["a.bin"]),
    (os.path.join("run", "checkpoints", "20"), [], []),
  ]


def test_remove_replace_and_rmtree_on_a_bucket(bucket):
  url, root = bucket
  _build_tree(url)
  paths.replace(f"{url}/run/x.tmp-host-1-ab", f"{url}/run/x.bin")
  assert (root / "run" / "x.bin").read_bytes() == b"partial"
  paths.remove(f"{url}/run/x.bin")
  with pytest.raises(FileNotFoundError):
    paths.remove(f"{url}/run/x.bin")
  paths.rmtree(f"{url}/run/checkpoints")
  assert sorted(os.listdir(root / "run")) == ["config.json"]


def _temporaries() -> set[str]:
  return {n for n in os.listdir(tempfile.gettempdir()) if fileio.TEMP_MARKER in n}


def test_atomic_writes_and_json_reads_reach_a_bucket_whole(bucket):
  url, root = bucket
  before = _temporaries()
  fileio.write_json_atomic(f"{url}/run/metrics.json", {"rsum": 1.5})
  assert (root / "run" / "metrics.json").read_text() == '{\n  "rsum": 1.5\n}\n'
  assert fileio.read_json(f"{url}/run/metrics.json") == {"rsum": 1.5}
  assert fileio.read_utf8_lines(f"{url}/run/metrics.json")[1] == '  "rsum": 1.5'
  assert fileio.file_digest(f"{url}/run/metrics.json")[0] == 18
  with pytest.raises(RuntimeError), fileio.atomic_path(f"{url}/run/metrics.json") as tmp:
    pathlib.Path(tmp).write_text("half")
    raise RuntimeError("stopped")
  assert fileio.read_json(f"{url}/run/metrics.json") == {"rsum": 1.5}  # untouched
  assert _temporaries() == before  # the local stand-in is gone, either way


def test_a_report_and_a_checkpoint_manifest_on_a_bucket(bucket):
  from jitr.evaluation import report
  from jitr.training import checkpoint_manifest

  url, root = bucket
  written = report.write_report(f"{url}/eval", {"rsum": 3.0, "i2t_R@1": 1.0}, plots=False)
  assert written["json"] == f"{url}/eval/metrics.json"
  assert fileio.read_json(root / "eval" / "metrics.json") == {"i2t_R@1": 1.0, "rsum": 3.0}
  step = f"{url}/ckpt/7"
  with paths.open(f"{step}/state/array", "wb") as f:
    f.write(b"weights")
  assert checkpoint_manifest.write_manifest(step) == f"{step}/jitr_manifest.json"
  assert checkpoint_manifest.verify_manifest(step) is None
  (root / "ckpt" / "7" / "state" / "array").write_bytes(b"weightz")
  assert "sha256 differs" in checkpoint_manifest.verify_manifest(step)


def test_precomp_features_and_captions_read_from_a_bucket_equal_the_local_ones(bucket, tmp_path):
  from jitr.data import precomp
  from tests.file_fixtures import write_precomp

  url, root = bucket
  local = write_precomp(tmp_path / "local", n_images=3, n_eval=2)
  write_precomp(root, n_images=3, n_eval=2)
  here = precomp.load_precomp_split(local, "dev")
  there = precomp.load_precomp_split(f"{url}/f30k_precomp", "dev")
  assert there.captions == here.captions
  np.testing.assert_array_equal(there.images, here.images)
  assert not isinstance(there.images, np.memmap)  # an object is read whole


def test_stored_embeddings_round_trip_through_a_bucket(bucket):
  from jitr.relevance import embedding_store

  url, _ = bucket
  arrays = {"images": np.arange(6.0).reshape(2, 3)}
  embedding_store.write_embeddings(f"{url}/emb", arrays, {"model": "m"})
  got = embedding_store.read_embeddings(f"{url}/emb", {"model": "m"})
  np.testing.assert_array_equal(got["images"], arrays["images"])


def test_tensorboard_events_written_to_a_bucket_are_read_back(bucket):
  from tensorboard.backend.event_processing import event_file_loader

  from jitr.training.tensorboard_writer import TensorBoardWriter

  url, root = bucket
  with TensorBoardWriter(f"{url}/run/tensorboard") as writer:
    writer.write_scalars(3, {"loss": 0.5})
  (event_file,) = (root / "run" / "tensorboard").iterdir()
  events = list(event_file_loader.EventFileLoader(str(event_file)).Load())
  assert [(e.step, [v.tag for v in e.summary.value]) for e in events[1:]] == [(3, ["loss"])]


# Calls that take a path and know only local files: outside jitr.paths (and fileio's local
# branch, and the stat of a local file after checking it is one) no module may make them.
_LOCAL_ONLY = {
  "open",
  "os.path.exists",
  "os.path.isdir",
  "os.path.isfile",
  "os.path.getsize",
  "os.path.abspath",
  "os.path.realpath",
  "os.listdir",
  "os.scandir",
  "os.stat",
  "os.makedirs",
  "os.mkdir",
  "os.remove",
  "os.unlink",
  "os.rmdir",
  "os.replace",
  "os.rename",
  "os.walk",
  "glob.glob",
  "shutil.rmtree",
  "shutil.copy",
  "shutil.copyfile",
  "shutil.move",
}
_ALLOWED = {
  "jitr/paths.py": "the path layer itself",
  "jitr/fileio.py": "the local branch of the atomic write (a URL is uploaded by jitr.paths)",
  "jitr/folder_swap.py": "the local branch of the folder swap (a URL's folder is built in a "
  "local temporary folder and uploaded by jitr.paths)",
  "jitr/relevance/checksums.py": "os.stat of a local file (a URL is hashed directly)",
  "jitr/experiment/pinned_inputs.py": "os.stat of a local file (a URL's identity is its size)",
  "jitr/relevance/sentence.py": "the text model's folder (installed locally, never a URL)",
  "jitr/papers/shipped_configs.py": "config files: Python that ml_collections imports from a local "
  "path (the shipped folder or the command line's), never a URL",
}


def _dotted(node: ast.expr) -> str:
  if isinstance(node, ast.Name):
    return node.id
  if isinstance(node, ast.Attribute):
    return f"{_dotted(node.value)}.{node.attr}"
  return ""


def test_no_module_hands_a_path_to_a_local_only_call():
  repo = pathlib.Path(__file__).resolve().parents[1]
  found = []
  for file in sorted((repo / "jitr").rglob("*.py")):
    rel = file.relative_to(repo).as_posix()
    if rel in _ALLOWED or rel.startswith("jitr/torch/"):
      continue
    for node in ast.walk(ast.parse(file.read_text())):
      if isinstance(node, ast.Call) and _dotted(node.func) in _LOCAL_ONLY:
        found.append(f"{rel}:{node.lineno}: {_dotted(node.func)}")
  assert found == []


def test_the_scan_finds_a_local_only_call():
  tree = ast.parse("import os\nwith open(p) as f:\n  os.path.exists(q)\nglob.glob(r)\n")
  calls = [_dotted(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]
  assert sorted(c for c in calls if c in _LOCAL_ONLY) == ["glob.glob", "open", "os.path.exists"]


def test_a_failed_upload_is_one_error_and_leaves_no_object(bucket, monkeypatch):
  url, root = bucket
  real_open = paths.open

  def full_disk(path, mode="r", **kw):
    if paths.is_url(path) and "w" in mode:
      raise OSError(28, "No space left on device")
    return real_open(path, mode, **kw)

  monkeypatch.setattr(paths, "open", full_disk)
  with pytest.raises(OSError, match=r"disk full: could not write gs://bucket/a/b\.json"):
    fileio.write_json_atomic(f"{url}/a/b.json", {})
  assert not (root / "a" / "b.json").exists()
  with contextlib.suppress(FileNotFoundError):
    assert os.listdir(root / "a") == []
