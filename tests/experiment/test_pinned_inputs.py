"""A workdir pins the files its results depend on (``inputs.json``): a resume, jitr-eval,
an ensemble member, a fine-tuning source and a teacher refuse a changed one in one line
and write nothing, a moved folder with the same contents passes, and an allowed change is
recorded; an unchanged file is checked by its size and time, not read."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from jitr import experiment, fileio
from jitr.experiment import pinned_inputs
from jitr.experiment.pinned_inputs import ChangedInputError
from tests.file_fixtures import precomp_config, snapshot, write_precomp


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  """``(root, workdir, config)``: a finished tiny run on a generated f30k_precomp."""
  root = tmp_path_factory.mktemp("pinned")
  write_precomp(root / "data")
  config = precomp_config(root / "data")
  config.token_buckets = ()
  workdir = root / "run"
  experiment.train_and_evaluate(config, str(workdir))
  return root, workdir, config


def _pins(workdir) -> dict:
  return json.loads((workdir / "inputs.json").read_text())["inputs"]


def test_the_run_pins_its_features_captions_and_vocabulary(trained):
  root, workdir, _ = trained
  pins = _pins(workdir)
  folder = root / "data" / "f30k_precomp"
  assert sorted(pins) == sorted(
    ["workdir vocab.json"]
    + [f"f30k_precomp/{s}_{f}" for s in ("train", "dev", "test") for f in ("ims.npy", "caps.txt")]
  )
  train = pins["f30k_precomp/train_ims.npy"]
  assert train["path"] == str(folder / "train_ims.npy")
  assert train["size"] == (folder / "train_ims.npy").stat().st_size
  assert train["sha256"] == fileio.file_digest(str(folder / "train_ims.npy"))[1]
  assert pins["workdir vocab.json"]["path"] == str(workdir / "vocab.json")
  # the run's own data: nothing jitr knows the bytes of, pinned as found
  assert {pin["verified"] for pin in pins.values()} == {"none"}


def test_unchanged_files_are_not_read_again(trained, monkeypatch):
  root, workdir, config = trained
  calls = []
  digest = fileio.file_digest
  monkeypatch.setattr(fileio, "file_digest", lambda p, **k: calls.append(p) or digest(p, **k))
  now, changes = pinned_inputs.verify_inputs(json.loads(config.to_json()), str(workdir))
  assert (calls, changes) == ([], [])
  assert {r: p.sha256 for r, p in now.items()} == {
    r: p["sha256"] for r, p in _pins(workdir).items()
  }


def test_a_vocabulary_changed_at_the_same_size_is_refused_by_jitr_eval(trained, tmp_path):
  root, workdir, _ = trained
  copy = tmp_path / "run"
  shutil.copytree(workdir, copy)
  _repin(copy)
  words = json.loads((copy / "vocab.json").read_text())
  words["words"][4], words["words"][5] = words["words"][5], words["words"][4]  # same size
  (copy / "vocab.json").write_text(json.dumps(words))
  before = snapshot(copy)
  with pytest.raises(ChangedInputError) as err:
    experiment.evaluate_workdir(str(copy), split="test")
  assert str(err.value).startswith(f"{copy / 'vocab.json'}: changed since {copy / 'inputs.json'}")
  assert str(err.value).endswith("(pass --allow_changed_inputs if the change is meant)")
  assert snapshot(copy) == before  # nothing written
  experiment.evaluate_workdir(str(copy), split="test", allow_changed_inputs=True)
  report = json.loads((copy / "eval_test" / "metrics.json").read_text())
  (change,) = report["changed_inputs"]
  assert (change["workdir"], change["role"]) == (str(copy), "workdir vocab.json")
  assert change["pinned"]["sha256"] != change["now"]["sha256"]


def _repin(workdir) -> None:
  """Pins ``workdir``'s inputs as they are now (a copied workdir's vocab.json path)."""
  from jitr.experiment.workdir import read_workdir_config

  config = read_workdir_config(str(workdir))
  now, _ = pinned_inputs.check_inputs(config, str(workdir))
  pinned_inputs.write_pins(str(workdir), now)


def test_a_moved_folder_passes_and_other_data_is_refused_on_resume(trained, tmp_path):
  root, workdir, config = trained
  moved = tmp_path / "moved"
  shutil.copytree(root / "data", moved)
  config = config.copy_and_resolve_references()
  config.precomp_root = str(moved)  # the same contents elsewhere: a resume passes the check
  pinned_inputs.verify_inputs(json.loads(config.to_json()), str(workdir))
  features = moved / "f30k_precomp" / "train_ims.npy"
  changed = np.load(features)
  changed[0, 0, 0] += 1.0
  np.save(features, changed)
  before = snapshot(workdir)
  with pytest.raises(ChangedInputError) as err:
    experiment.train_and_evaluate(config, str(workdir))
  assert str(err.value).startswith(
    f"{features} (pinned at {root / 'data' / 'f30k_precomp' / 'train_ims.npy'}): changed since "
  )
  assert snapshot(workdir) == before


def test_an_ensemble_of_workdirs_tested_on_other_data_is_refused(trained, tmp_path):
  root, workdir, _ = trained
  other_data = tmp_path / "data"
  shutil.copytree(root / "data", other_data)
  test = other_data / "f30k_precomp" / "test_ims.npy"
  np.save(test, np.load(test)[::-1].copy())  # the same shape and counts, other images
  other = tmp_path / "other"
  shutil.copytree(workdir, other)
  saved = json.loads((other / "config.json").read_text())
  saved["precomp_root"] = str(other_data)
  (other / "config.json").write_text(json.dumps(saved, indent=2))
  _repin(other)
  with pytest.raises(ValueError) as err:
    experiment.evaluate_workdir(str(workdir), split="test", ensemble=[str(other)])
  assert str(err.value).startswith(
    f"--ensemble: {other} does not match {workdir}: its test split's test_ims.npy is another "
    "file (SHA-256 "
  )


def test_a_fine_tuning_source_whose_vocabulary_changed_is_refused(trained, tmp_path):
  root, workdir, config = trained
  source = tmp_path / "source"
  shutil.copytree(workdir, source)
  _repin(source)
  words = json.loads((source / "vocab.json").read_text())
  words["words"][4], words["words"][5] = words["words"][5], words["words"][4]
  (source / "vocab.json").write_text(json.dumps(words))
  config = config.copy_and_resolve_references()
  config.init_from = str(source)
  with pytest.raises(ChangedInputError) as err:
    experiment.train_and_evaluate(config, str(tmp_path / "tuned"))
  assert str(err.value).startswith(f"{source / 'vocab.json'}: changed since ")
  assert not (tmp_path / "tuned").exists()
