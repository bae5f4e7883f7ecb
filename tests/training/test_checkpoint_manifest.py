"""jitr_manifest.json: written last and atomically over every file of a saved step; a step
is restored only when every listed file has its listed size and SHA-256."""

import hashlib
import json
import os
import shutil

import jax
import optax
import pytest

from jitr.training import checkpoints as checkpoints_lib
from jitr.training import distributed
from jitr.training.checkpoint_manifest import (
  MANIFEST_NAME,
  build_manifest,
  file_digest,
  verify_manifest,
  write_manifest,
)
from jitr.training.checkpoints import CheckpointCorruptError, Checkpoints
from tests.file_fixtures import snapshot
from tests.training import tiny
from tests.training.test_checkpoint_faults import _train


def _step_folder(root):
  """A stand-in step folder: files at the top and in nested folders."""
  step = root / "6"
  (step / "default" / "d").mkdir(parents=True)
  (step / "_CHECKPOINT_METADATA").write_bytes(b'{"step": 6}')
  (step / "default" / "_METADATA").write_bytes(b"m" * 300)
  (step / "default" / "d" / "abc").write_bytes(bytes(range(256)) * 9)
  return step


def _flip(path, offset):
  """Changes one byte of ``path`` in place (same size)."""
  data = bytearray(path.read_bytes())
  data[offset] ^= 0xFF
  path.write_bytes(bytes(data))


def test_manifest_lists_every_file_with_its_size_and_sha256(tmp_path):
  step = _step_folder(tmp_path)
  path = write_manifest(str(step))
  assert path == str(step / MANIFEST_NAME)
  manifest = json.loads((step / MANIFEST_NAME).read_text())
  expected = {
    rel: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    for rel, data in (
      ("_CHECKPOINT_METADATA", b'{"step": 6}'),
      ("default/_METADATA", b"m" * 300),
      ("default/d/abc", bytes(range(256)) * 9),
    )
  }
  assert manifest == {"format": 1, "files": expected}
  assert build_manifest(str(step)) == manifest  # the manifest does not list itself
  assert verify_manifest(str(step)) is None


def test_hashing_in_chunks_gives_the_whole_file_digest(tmp_path):
  data = os.urandom(10_000)
  (tmp_path / "f").write_bytes(data)
  assert file_digest(str(tmp_path / "f"), chunk_bytes=7) == (
    10_000,
    hashlib.sha256(data).hexdigest(),
  )


def test_writing_leaves_no_temporary_file_and_a_failed_write_leaves_no_manifest(
  tmp_path, monkeypatch
):
  step = _step_folder(tmp_path)
  write_manifest(str(step))
  assert sorted(os.listdir(step)) == ["_CHECKPOINT_METADATA", "default", MANIFEST_NAME]
  (step / MANIFEST_NAME).unlink()

  def interrupted(src, dst):
    raise OSError("interrupted before the rename")

  monkeypatch.setattr(os, "replace", interrupted)
  with pytest.raises(OSError, match="interrupted"):
    write_manifest(str(step))
  assert sorted(os.listdir(step)) == ["_CHECKPOINT_METADATA", "default"]


def test_same_size_change_is_a_sha256_difference_naming_the_file(tmp_path):
  step = _step_folder(tmp_path)
  write_manifest(str(step))
  _flip(step / "default" / "d" / "abc", 1000)
  reason = verify_manifest(str(step))
  assert reason.startswith(f"{step / 'default' / 'd' / 'abc'}: sha256 differs from {MANIFEST_NAME}")


def test_size_difference_names_the_file_and_both_sizes(tmp_path):
  step = _step_folder(tmp_path)
  write_manifest(str(step))
  with open(step / "default" / "_METADATA", "ab") as f:
    f.write(b"x")
  assert verify_manifest(str(step)) == (
    f"{step / 'default' / '_METADATA'}: size is 301 bytes, {MANIFEST_NAME} lists 300"
  )


def test_missing_listed_file_is_named(tmp_path):
  step = _step_folder(tmp_path)
  write_manifest(str(step))
  (step / "default" / "d" / "abc").unlink()
  assert verify_manifest(str(step)) == (
    f"{step / 'default' / 'd' / 'abc'}: missing (listed in {MANIFEST_NAME})"
  )


def test_a_step_without_manifest_is_not_trusted(tmp_path):
  step = _step_folder(tmp_path)
  assert verify_manifest(str(step)) == (
    f"{step / MANIFEST_NAME}: missing (an interrupted save, or a checkpoint saved without one)"
  )


@pytest.mark.parametrize(
  ("text", "reason"),
  [
    ('{"format": 1, "files": {', "not valid JSON"),
    ('{"format": 2, "files": {}}', "field 'format' is 2, expected 1"),
    ('{"format": 1, "files": {"a": {"size": "1"}}}', "entry 'a' is not"),
  ],
)
def test_an_unreadable_manifest_is_named(tmp_path, text, reason):
  step = _step_folder(tmp_path)
  (step / MANIFEST_NAME).write_text(text)
  found = verify_manifest(str(step))
  assert found.startswith(str(step / MANIFEST_NAME)) and reason in found, found


def test_seal_writes_on_process_0_only_between_two_barriers(tmp_path, monkeypatch):
  events = []

  class Manager:
    directory = tmp_path

    def wait_until_finished(self):
      events.append("orbax finished")

  _step_folder(tmp_path)
  monkeypatch.setattr(jax, "process_count", lambda: 2)
  monkeypatch.setattr(
    distributed.multihost_utils, "sync_global_devices", lambda name: events.append(name)
  )
  for process in (1, 0):
    monkeypatch.setattr(jax, "process_index", lambda p=process: p)
    events.append(f"process {process}")
    checkpoints_lib.seal(Manager(), 6)
    events.append(f"manifest: {(tmp_path / '6' / MANIFEST_NAME).exists()}")
  assert events == [
    "process 1",
    "orbax finished",
    "jitr_checkpoint_committed_6",
    "jitr_checkpoint_sealed_6",
    "manifest: False",
    "process 0",
    "orbax finished",
    "jitr_checkpoint_committed_6",
    "jitr_checkpoint_sealed_6",
    "manifest: True",
  ]


# ---------------------------------------------------------------- Checkpoints with manifests
@pytest.fixture(scope="module")
def two_epochs(tmp_path_factory):
  """A finished two-epoch run of tests/training/tiny.py: latest steps 3 and 6."""
  run = tmp_path_factory.mktemp("manifest") / "run"
  _train(str(run))
  return run


def _copy(src, dst):
  shutil.copytree(src, dst)
  return dst


def test_every_saved_step_carries_a_manifest_that_verifies(two_epochs):
  latest = two_epochs / "checkpoints" / "latest"
  assert sorted(os.listdir(latest)) == ["3", "6"]
  for step in ("3", "6"):
    assert (latest / step / MANIFEST_NAME).is_file()
    assert verify_manifest(str(latest / step)) is None


def test_a_step_without_manifest_is_skipped_for_the_older_one(two_epochs, tmp_path, caplog):
  run = _copy(two_epochs, tmp_path / "run")
  (run / "checkpoints" / "latest" / "6" / MANIFEST_NAME).unlink()
  checkpoints = Checkpoints(str(run))
  with caplog.at_level("WARNING"):
    restored = checkpoints.restore(tiny.make_state(optax.adam(1e-2)))
  checkpoints.close()
  assert int(restored.step) == 3
  assert f"checkpoint {run / 'checkpoints' / 'latest' / '6'} is damaged" in caplog.text
  assert f"{MANIFEST_NAME}: missing (an interrupted save" in caplog.text


def test_without_fallback_a_damaged_step_is_one_line_naming_the_file(two_epochs, tmp_path):
  run = _copy(two_epochs, tmp_path / "run")
  step = run / "checkpoints" / "latest" / "6"
  damaged = step / "_CHECKPOINT_METADATA"
  _flip(damaged, 3)
  before = snapshot(run)
  checkpoints = Checkpoints(str(run))
  with pytest.raises(CheckpointCorruptError) as err:
    checkpoints.restore(tiny.make_state(optax.adam(1e-2)), fallback=False)
  checkpoints.close()
  message = str(err.value)
  assert "\n" not in message
  assert message.startswith(
    f"checkpoint {step} cannot be restored: {damaged}: sha256 differs from {MANIFEST_NAME}"
  )
  assert snapshot(run) == before


def test_the_next_save_of_a_damaged_step_replaces_it(two_epochs, tmp_path, caplog):
  run = _copy(two_epochs, tmp_path / "run")
  step = run / "checkpoints" / "latest" / "6"
  data = sorted((step / "default").rglob("d/*"), key=lambda p: p.stat().st_size)[-1]
  _flip(data, data.stat().st_size // 2)
  checkpoints = Checkpoints(str(run))
  state = checkpoints.restore(tiny.make_state(optax.adam(1e-2)))
  assert int(state.step) == 3
  with caplog.at_level("WARNING"):
    checkpoints.save_latest(state.replace(step=jax.numpy.asarray(6)))
  checkpoints.close()
  assert f"deleting damaged checkpoint {step} (replaced by the save of step 6)" in caplog.text
  assert verify_manifest(str(step)) is None


def test_a_damaged_best_is_replaced_by_the_next_save_even_when_it_scored_higher(
  two_epochs, tmp_path
):
  run = _copy(two_epochs, tmp_path / "run")
  checkpoints = Checkpoints(str(run))
  state = checkpoints.restore(tiny.make_state(optax.adam(1e-2)))
  assert checkpoints.save_best(state, {"rsum": 5.0})
  assert not checkpoints.save_best(state.replace(step=jax.numpy.asarray(7)), {"rsum": 1.0})
  _flip(run / "checkpoints" / "best" / "6" / "_CHECKPOINT_METADATA", 2)
  assert checkpoints.save_best(state.replace(step=jax.numpy.asarray(8)), {"rsum": 1.0})
  checkpoints.close()
  assert sorted(os.listdir(run / "checkpoints" / "best")) == ["8"]
  assert verify_manifest(str(run / "checkpoints" / "best" / "8")) is None


def test_a_best_whose_metrics_orbax_cannot_read_is_one_line_naming_the_file(two_epochs, tmp_path):
  run = _copy(two_epochs, tmp_path / "run")
  checkpoints = Checkpoints(str(run))
  state = checkpoints.restore(tiny.make_state(optax.adam(1e-2)))
  checkpoints.save_best(state, {"rsum": 5.0})
  checkpoints.close()
  damaged = run / "checkpoints" / "best" / "6" / "metrics" / "metrics"
  damaged.write_bytes(b"\xff" * damaged.stat().st_size)  # not UTF-8: orbax cannot open the folder
  with pytest.raises(CheckpointCorruptError) as err:
    Checkpoints(str(run))
  assert str(err.value).startswith(
    f"checkpoint {damaged.parents[1]} cannot be read: {damaged}: sha256 differs from "
    f"{MANIFEST_NAME}"
  )
  assert str(err.value).endswith("; move that folder away to use the others")
