"""``config.init_from``: a run starts from another workdir's best parameters and model
state with a fresh optimizer; another network, another vocabulary or a workdir without a
checkpoint is refused in one line before anything is written; a resume ignores it."""

import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

import jax
import ml_collections
import numpy as np
import pytest

from jitr import experiment
from jitr.experiment.workdir_variables import restore_variables
from tests.file_fixtures import precomp_config, snapshot, write_precomp

REPO = pathlib.Path(__file__).resolve().parents[2]


def _best_params(workdir, config):
  """The params of ``workdir``'s best checkpoint, restored as its config.json builds them."""
  data = experiment.load_data(config, config.data_dir)
  saved = json.loads((workdir / "config.json").read_text())
  _, variables, _ = restore_variables(
    str(workdir), saved, len(data.vocab), data.splits["train"], "best"
  )
  return variables["params"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
  """A finished tiny precomp run (its data folder and config) to start from."""
  root = tmp_path_factory.mktemp("init_from")
  write_precomp(root / "data")
  config = precomp_config(root / "data")
  experiment.train_and_evaluate(config, str(root / "source"))
  return root, config


def test_a_run_starts_from_the_source_best_parameters(source, tmp_path, monkeypatch):
  root, config = source
  config = config.copy_and_resolve_references()
  config.optimizer.learning_rate = 1e-30  # the steps change nothing: the end is the start
  monkeypatch.chdir(root)
  config.init_from = "source"  # relative: recorded absolute
  experiment.train_and_evaluate(config, str(tmp_path / "tuned"))
  want = _best_params(root / "source", config)
  got = _best_params(tmp_path / "tuned", config)
  for (path, w), g in zip(jax.tree_util.tree_leaves_with_path(want), jax.tree.leaves(got)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), atol=1e-7, err_msg=str(path))
  saved = json.loads((tmp_path / "tuned" / "config.json").read_text())
  assert saved["init_from"] == str(root / "source")
  # a resume continues from its own checkpoint: the source may be gone (a copy here)
  moved = tmp_path / "source_copy"
  shutil.copytree(root / "source", moved)
  config.init_from = str(moved)
  shutil.rmtree(moved)
  config.num_epochs = 2
  experiment.train_and_evaluate(config, str(tmp_path / "tuned"))
  saved = json.loads((tmp_path / "tuned" / "config.json").read_text())
  assert saved["init_from"] == str(root / "source") and saved["num_epochs"] == 2


def test_a_fresh_init_is_not_the_source(source, tmp_path):
  """Without init_from the same config starts elsewhere (the test above can fail)."""
  root, config = source
  config = config.copy_and_resolve_references()
  config.optimizer.learning_rate = 1e-30
  config.seed = 1
  experiment.train_and_evaluate(config, str(tmp_path / "fresh"))
  want = jax.tree.leaves(_best_params(root / "source", config))
  got = jax.tree.leaves(_best_params(tmp_path / "fresh", config))
  assert max(float(np.abs(np.asarray(a) - np.asarray(b)).max()) for a, b in zip(want, got)) > 0.01


def _refused(config, tmp_path) -> str:
  before = snapshot(tmp_path)
  with pytest.raises((ValueError, FileNotFoundError)) as err:
    experiment.train_and_evaluate(config, str(tmp_path / "run"))
  assert snapshot(tmp_path) == before and not (tmp_path / "run").exists()
  return str(err.value)


def test_another_network_is_refused_naming_a_parameter(source, tmp_path):
  root, config = source
  config = config.copy_and_resolve_references()
  config.init_from = str(root / "source")
  config.model.embed_dim = 32
  message = _refused(config, tmp_path)
  assert message.startswith(
    f"config.init_from: {root / 'source'} holds another network than this run's config.model: "
  ), message
  assert "(16,) there, (32,) here" in message or "16) there" in message, message


def test_another_vocabulary_is_refused(source, tmp_path):
  root, config = source
  config = config.copy_and_resolve_references()
  config.init_from = str(root / "source")
  config.vocab_min_count = 1000  # only the special tokens
  config.vocab_min_coverage = 0.0  # (a run would refuse such a vocabulary by itself)
  assert _refused(config, tmp_path).startswith(
    f"config.init_from: {root / 'source'} was trained with another vocabulary ("
  )


def test_a_workdir_without_a_checkpoint_or_config_is_refused(source, tmp_path):
  root, config = source
  config = config.copy_and_resolve_references()
  empty = tmp_path / "empty"
  empty.mkdir()
  config.init_from = str(empty)
  assert _refused(config, tmp_path) == (
    f"config.init_from: {empty / 'config.json'}: no config.json; expected a jitr-train workdir"
  )
  unfinished = tmp_path / "unfinished"
  shutil.copytree(root / "source", unfinished, ignore=shutil.ignore_patterns("checkpoints"))
  config.init_from = str(unfinished)
  assert _refused(config, tmp_path) == (
    f"config.init_from: {unfinished / 'checkpoints'}: no checkpoint (expected best/ or latest/)"
  )


def test_init_from_must_be_a_string(source, tmp_path):
  _, config = source
  fields = config.to_dict()
  fields["init_from"] = 3  # as a hand-edited config.json could hold it
  config = ml_collections.ConfigDict(fields)
  assert _refused(config, tmp_path) == "config.init_from: expected a string, got 3 (int)"


def _documented_command() -> list[str]:
  """The command of docs/training.md's "Fine-tuning from a workdir", as its words."""
  page = (REPO / "docs" / "training.md").read_text(encoding="utf-8")
  block = page.split("## Fine-tuning from a workdir", 1)[1].split("```bash\n", 1)[1]
  return shlex.split(block.split("```", 1)[0].replace("\\\n", " "))


@pytest.mark.slow
def test_the_documented_command_fine_tunes(source, tmp_path):
  """docs/training.md's command, run as written from a folder holding ``configs/`` and
  ``workdirs/default`` (the source run), plus the tiny run's settings."""
  root, config = source
  command = _documented_command()
  assert command[:2] == ["jitr-train", "--config=configs/default.py"], command
  shutil.copytree(REPO / "configs", tmp_path / "configs")
  shutil.copytree(root / "source", tmp_path / "workdirs" / "default")
  tiny = [f"--config.{k}={v}" for k, v in _TINY.items()]
  exe = shutil.which("jitr-train") or str(pathlib.Path(sys.executable).with_name("jitr-train"))
  done = subprocess.run(
    [exe, *command[1:], f"--config.precomp_root={config.precomp_root}",
     f"--config.data_dir={config.data_dir}", *tiny],
    cwd=tmp_path, capture_output=True, text=True, timeout=600,
    env={**os.environ, "PYTHONPATH": str(REPO)},
  )  # fmt: skip
  assert done.returncode == 0, done.stderr[-3000:]
  saved = json.loads((tmp_path / "workdirs" / "tuned" / "config.json").read_text())
  assert saved["init_from"] == str(tmp_path / "workdirs" / "default")
  assert saved["optimizer"]["learning_rate"] == 1e-4


# precomp_config's run, as overrides of configs/default.py
_TINY = {
  "dataset": "f30k_precomp",
  "graded": "{}",
  "loss": "{'triplet': {'weight': 1.0, 'margin': 0.2}}",
  "num_epochs": 1,
  "batch_size": 16,
  "eval_batch_size": 16,
  "log_every_steps": 2,
  "compilation_cache": False,
  "model.embed_dim": 16,
  "model.word_dim": 8,
}
