"""jitr-eval on workdirs it cannot evaluate as they are: a config.json that jitr-train did
not write (a field missing or of the wrong type), no checkpoint, and the query panel's
size. Each is one line before anything is written, or the report without a stale panel."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from jitr.experiment import evaluate
from tests.experiment.test_evaluate_workdir import REPO, make_workdir, tiny_config
from tests.file_fixtures import snapshot


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
  """A jitr_shapes tiny workdir with a best checkpoint (untrained); data in ``root/tfds``."""
  root = tmp_path_factory.mktemp("eval_faults")
  make_workdir(root / "run", tiny_config(0))
  return root / "run"


def _beside(workdir, request):
  """A new folder beside ``workdir`` named after the test (so it shares ``workdir``'s data
  in ``../tfds``)."""
  return workdir.parent / re.sub(r"\W", "_", request.node.name)


def _copy_with_config(workdir, target, change) -> None:
  """``workdir`` copied to ``target``, its config.json passed through ``change(dict)``."""
  shutil.copytree(workdir, target)
  saved = json.loads((target / "config.json").read_text())
  change(saved)
  (target / "config.json").write_text(json.dumps(saved))


@pytest.mark.parametrize(
  ("change", "problem"),
  [
    (
      lambda c: c.pop("model"),
      "config.model: missing; expected an object (see configs/default.py)",
    ),
    (
      lambda c: c.__setitem__("batch_size", "abc"),
      "config.batch_size: expected a whole number >= 1, got 'abc' (str)",
    ),
    (
      lambda c: c["model"].__setitem__("embed_dim", "16"),
      "config.model.embed_dim: expected a whole number, got '16' (str)",
    ),
    (
      lambda c: c["model"].__setitem__("embed_size", 16),
      "config.model.embed_size: not a setting of the 'vse' network; expected one of dtype, "
      "embed_dim, image, image_pooling, text, text_pooling, unroll, word_dim",
    ),
    (lambda c: c.__setitem__("model", 3), "config.model: expected an object, got 3 (int)"),
  ],
  ids=["no model", "batch_size str", "embed_dim str", "unknown setting", "model not object"],
)
def test_a_config_json_jitr_train_did_not_write_is_one_line(workdir, request, change, problem):
  run = _beside(workdir, request)
  _copy_with_config(workdir, run, change)
  before = snapshot(run)
  with pytest.raises(ValueError) as err:
    evaluate.evaluate_workdir(str(run), split="test")
  assert str(err.value) == f"{run / 'config.json'}: {problem}"
  assert snapshot(run) == before


def test_jitr_eval_on_a_config_json_without_model_is_one_line(workdir, request):
  run = _beside(workdir, request)
  _copy_with_config(workdir, run, lambda c: c.pop("model"))
  before = snapshot(run)
  exe = shutil.which("jitr-eval") or os.path.join(os.path.dirname(sys.executable), "jitr-eval")
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  proc = subprocess.run(
    [exe, f"--workdir={run}"], capture_output=True, text=True, env=env, timeout=300
  )
  assert proc.returncode == 1, proc.stderr[-3000:]
  assert proc.stderr.strip() == (
    f"jitr-eval: error: {run / 'config.json'}: config.model: missing; expected an object "
    "(see configs/default.py)"
  )
  assert snapshot(run) == before


@pytest.mark.parametrize("which", ["best", "latest"])
def test_a_workdir_without_that_checkpoint_is_refused_and_left_as_it_was(workdir, request, which):
  run = _beside(workdir, request)
  shutil.copytree(workdir, run, ignore=shutil.ignore_patterns("checkpoints"))
  before = snapshot(run)
  with pytest.raises(FileNotFoundError) as err:
    evaluate.evaluate_workdir(str(run), split="test", checkpoint=which)
  assert str(err.value) == (
    f"{run / 'checkpoints' / which}: no checkpoint to evaluate (jitr-train saves one at the "
    "end of each epoch)"
  )
  assert snapshot(run) == before
  assert not (run / "checkpoints").exists()


def test_num_queries_zero_writes_the_report_without_a_panel(workdir, request):
  run = _beside(workdir, request)
  shutil.copytree(workdir, run)
  evaluate.evaluate_workdir(str(run), split="test", num_queries=1)
  out = run / "eval_test"
  assert (out / "queries.png").is_file()
  metrics = json.loads((out / "metrics.json").read_text())
  (out / "metrics.json").unlink()
  again = evaluate.evaluate_workdir(str(run), split="test", num_queries=0)
  assert not (out / "queries.png").exists()  # the earlier panel is not left beside it
  assert json.loads((out / "metrics.json").read_text()) == metrics
  assert again["full/rsum"] == metrics["full/rsum"]


@pytest.mark.parametrize("num_queries", [-1, 1.5, True])
def test_a_bad_num_queries_is_refused_before_anything_is_written(workdir, request, num_queries):
  run = _beside(workdir, request)
  shutil.copytree(workdir, run)
  before = snapshot(run)
  with pytest.raises(ValueError) as err:
    evaluate.evaluate_workdir(str(run), split="test", num_queries=num_queries)
  assert str(err.value) == f"num_queries: expected a whole number >= 0, got {num_queries!r}"
  assert snapshot(run) == before
