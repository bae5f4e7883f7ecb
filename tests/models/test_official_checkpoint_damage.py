"""Damaged official checkpoints are refused with one line that names the path.

A small SGR model is saved the way the official ``train.py`` saves it (``torch.save`` of
``{'epoch', 'model', 'best_rsum', 'opt', 'Eiters'}``), as a zip and as a legacy file, and
then garbled, cut, emptied, replaced or given a NaN weight. Every refusal is an
:class:`OfficialCheckpointError` whose message is one line, names the path and never
advises turning ``weights_only`` off; an intact file still loads bit for bit.
"""

import argparse
import os
import pickle
import re
import sys
import zipfile

import jax
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sgraf_reference import flat_state_dict, torch_model  # noqa: E402

from jitr.models import OfficialCheckpointError  # noqa: E402
from jitr.models.official_checkpoint import RefusedGlobalError  # noqa: E402
from jitr.models.sgraf.convert import (  # noqa: E402
  load_official_checkpoint,
  load_official_state_dict,
  params_from_state_dict,
)
from jitr.models.vsrn import convert as vsrn_convert  # noqa: E402

FORMATS = {"zip": {}, "legacy": {"_use_new_zipfile_serialization": False}}
GRU_KEY = "txt_enc.cap_rnn.weight_ih_l0"


def save_official(path, parts, fmt, **extra):
  """The dict the official train.py's save_checkpoint writes, in the ``fmt`` layout."""
  opt = argparse.Namespace(module_name="SGR", embed_size=8, sim_dim=4, margin=0.2)
  state = [p.state_dict() for p in parts]
  checkpoint = {"epoch": 3, "model": state, "best_rsum": 512.5, "opt": opt, "Eiters": 7}
  torch.save({**checkpoint, **extra}, path, **FORMATS[fmt])
  return path


@pytest.fixture(scope="module")
def parts():
  return torch_model("SGR")


@pytest.fixture(params=sorted(FORMATS))
def official(request, tmp_path, parts):
  """``(path, format)`` of an intact official SGR checkpoint."""
  path = tmp_path / f"model_best_{request.param}.pth.tar"
  return save_official(path, parts, request.param), request.param


def refusal(path, load=load_official_state_dict) -> str:
  """The message ``load(path)`` refuses ``path`` with: one line, naming the path, with no
  advice about ``weights_only``."""
  with pytest.raises(OfficialCheckpointError) as info:
    load(path)
  message = str(info.value)
  assert os.fspath(path) in message
  assert "weights_only" not in message
  assert "\n" not in message
  return message


def data_offset(blob: bytes, tensor) -> int:
  """Where the raw float32 bytes of ``tensor`` start in ``blob`` (found exactly once)."""
  raw = tensor.detach().numpy().tobytes()
  at = blob.find(raw)
  assert at >= 0 and blob.find(raw, at + 1) == -1
  return at


def garble(path, offset: int, data: bytes | None = None) -> None:
  """Overwrites 8 bytes at ``offset`` with ``data`` (default: the old bytes XOR 0xA5)."""
  blob = bytearray(path.read_bytes())
  old = blob[offset : offset + 8]
  blob[offset : offset + 8] = data if data is not None else bytes(b ^ 0xA5 for b in old)
  path.write_bytes(bytes(blob))


def assert_same_state(got, want):
  assert got.keys() == want.keys()
  for key in want:
    assert torch.equal(got[key], want[key]), key


def test_intact_checkpoint_loads_identically(official, parts):
  path, _ = official
  assert_same_state(load_official_state_dict(path), flat_state_dict(parts))
  got = load_official_checkpoint(path)
  jax.tree.map(np.testing.assert_array_equal, got, params_from_state_dict(flat_state_dict(parts)))


def test_garbled_gru_weights_in_a_zip_fail_the_crc_naming_the_member(tmp_path, parts):
  path = save_official(tmp_path / "model_best.pth.tar", parts, "zip")
  raw = flat_state_dict(parts)[GRU_KEY].numpy().tobytes()
  with zipfile.ZipFile(path) as archive:
    member = next(n for n in archive.namelist() if archive.read(n) == raw)
  garble(path, data_offset(path.read_bytes(), flat_state_dict(parts)[GRU_KEY]) + 16)
  with torch.serialization.safe_globals([argparse.Namespace]):  # torch alone does not notice
    silent = torch.load(path, map_location="cpu", weights_only=True)["model"][1]
  assert not torch.equal(silent["cap_rnn.weight_ih_l0"], flat_state_dict(parts)[GRU_KEY])
  message = refusal(path)
  assert f"zip member {member!r} fails its CRC check" in message


def test_legacy_data_garbled_into_nan_is_refused_naming_the_key(tmp_path, parts):
  path = save_official(tmp_path / "model_best.pth.tar", parts, "legacy")
  weight = flat_state_dict(parts)[GRU_KEY]
  garble(path, data_offset(path.read_bytes(), weight) + 16, b"\xff" * 8)  # two float32 NaNs
  message = refusal(path)
  assert f"non-finite weights (NaN or inf) in {GRU_KEY!r} (2 of {weight.numel()})" in message


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_nan_weight_is_refused_naming_the_key(tmp_path, fmt):
  parts = torch_model("SGR")
  with torch.no_grad():
    parts[1].cap_rnn.weight_ih_l0[0, 0] = float("nan")
    parts[2].sim_eval_w.bias.fill_(float("inf"))
  path = save_official(tmp_path / "nan.pth.tar", parts, fmt)
  size = parts[1].cap_rnn.weight_ih_l0.numel()
  message = refusal(path)
  assert f"{GRU_KEY!r} (1 of {size})" in message
  assert "'sim_enc.sim_eval_w.bias' (1 of 1)" in message


def test_truncated_to_half_is_refused(official):
  path, fmt = official
  blob = path.read_bytes()
  path.write_bytes(blob[: len(blob) // 2])
  assert f"truncated or damaged PyTorch checkpoint ({fmt} torch.save file" in refusal(path)


def test_every_cut_is_refused(official):
  path, _ = official
  blob = path.read_bytes()
  for n in np.linspace(1, len(blob) - 1, 24).astype(int):
    path.write_bytes(blob[:n])
    refusal(path)


def test_legacy_cut_inside_the_magic_number_is_refused(tmp_path, parts):
  path = save_official(tmp_path / "model_best.pth.tar", parts, "legacy")
  path.write_bytes(path.read_bytes()[:7])
  assert "truncated PyTorch checkpoint (a legacy torch.save file cut after 7 bytes" in refusal(path)


def test_garbled_bytes_anywhere_are_refused_or_change_nothing_in_a_zip(official, parts):
  """Zip: 8 garbled bytes are refused or land where nothing is read (alignment padding).
  Legacy (no CRC): garbled data bytes can load as other finite values; anything that
  fails is still refused with one line."""
  path, fmt = official
  blob = path.read_bytes()
  want = flat_state_dict(parts)
  for offset in np.linspace(0, len(blob) - 8, 40).astype(int):
    path.write_bytes(blob)
    garble(path, int(offset))
    try:
      got = load_official_state_dict(path)
    except OfficialCheckpointError:
      refusal(path)
      continue
    if fmt == "zip":
      assert_same_state(got, want)


def test_empty_file_is_refused(tmp_path):
  path = tmp_path / "model_best.pth.tar"
  path.write_bytes(b"")
  assert "empty file, not a PyTorch checkpoint" in refusal(path)


@pytest.mark.parametrize("load", [load_official_state_dict, vsrn_convert.load_official_state_dict])
def test_random_bytes_are_refused(tmp_path, load):
  path = tmp_path / "model_best.pth.tar"
  path.write_bytes(np.random.default_rng(0).bytes(4096))
  message = refusal(path, load)
  assert "not a PyTorch checkpoint (expected a torch.save file: zip or legacy)" in message


def test_a_zip_that_is_not_a_torch_save_is_refused(tmp_path):
  path = tmp_path / "model_best.pth.tar"
  with zipfile.ZipFile(path, "w") as archive:
    archive.writestr("notes.txt", "not a checkpoint")
  assert "a zip without a data.pkl member" in refusal(path)


@pytest.mark.parametrize("load", [load_official_state_dict, vsrn_convert.load_official_state_dict])
def test_missing_path_is_refused(tmp_path, load):
  path = tmp_path / "runs" / "model_best.pth.tar"
  assert "no such file" in refusal(path, load)


def test_directory_is_refused(tmp_path):
  assert "not a regular file" in refusal(tmp_path)


def test_refused_global_is_one_line(official, parts):
  path, fmt = official
  save_official(path, parts, fmt, extra=np.random.default_rng(0))
  with pytest.raises(RefusedGlobalError) as info:
    load_official_state_dict(path)
  assert isinstance(info.value, pickle.UnpicklingError)
  assert re.search(r"refused to unpickle 'numpy\.random\.\S+'", refusal(path))


def test_without_pytorch_the_checkpoint_is_refused_in_one_line(official, monkeypatch):
  path, _ = official
  monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails as if not installed
  assert refusal(path) == (
    f"{path}: reading a PyTorch checkpoint needs PyTorch, which is not installed; install it "
    "with: pip install 'jitr[torch]'"
  )


def test_a_checkpoint_in_a_bucket_loads_as_the_local_file_does(official, tmp_path, monkeypatch):
  from tests.fake_bucket import fake_bucket

  path, _ = official
  monkeypatch.chdir(tmp_path)
  with fake_bucket(tmp_path / "bucket") as url:
    (tmp_path / "bucket" / "model_best.pth.tar").write_bytes(path.read_bytes())
    got = load_official_checkpoint(f"{url}/model_best.pth.tar")
  jax.tree.map(np.testing.assert_array_equal, got, load_official_checkpoint(path))
  assert not (tmp_path / "gs:").exists()
