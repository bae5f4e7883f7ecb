"""The integrity-checked embeddings store: round trip, identity, damaged files."""

import json
import os

import numpy as np
import pytest

from jitr.relevance.embedding_store import (
  ARRAYS_NAME,
  HEADER_NAME,
  EmbeddingsCorruptError,
  EmbeddingsMismatchError,
  read_embeddings,
  write_embeddings,
)

IDENTITY = {"teacher": "/w/vse", "step": 3, "dataset": {"fingerprint": "ab" * 32}}


def _arrays():
  rng = np.random.default_rng(0)
  return {"images": rng.normal(size=(4, 3)), "captions": rng.normal(size=(20, 3))}


def test_round_trip_is_exact_float32_and_leaves_no_temporaries(tmp_path):
  assert read_embeddings(str(tmp_path / "out"), IDENTITY) is None  # nothing stored yet
  header = write_embeddings(str(tmp_path / "out"), _arrays(), IDENTITY)
  got = read_embeddings(str(tmp_path / "out"), dict(IDENTITY))
  assert set(got) == {"images", "captions"}
  for name, values in _arrays().items():
    assert got[name].dtype == np.float32
    np.testing.assert_array_equal(got[name], values.astype(np.float32))
  assert sorted(os.listdir(tmp_path / "out")) == sorted([ARRAYS_NAME, HEADER_NAME])
  assert header["arrays"]["captions"] == {"shape": [20, 3], "dtype": "float32"}
  assert header["bytes"] == os.path.getsize(tmp_path / "out" / ARRAYS_NAME)


def test_other_identity_is_refused_naming_the_field(tmp_path):
  write_embeddings(str(tmp_path), _arrays(), IDENTITY)
  with pytest.raises(EmbeddingsMismatchError) as err:
    read_embeddings(str(tmp_path), {**IDENTITY, "step": 4})
  assert str(err.value) == (
    f"{tmp_path / HEADER_NAME}: identity field 'step' is 3, this run expects 4; "
    f"delete {tmp_path} to recompute"
  )


@pytest.mark.parametrize("damage", ["flip", "truncate", "remove", "header"])
def test_damaged_files_are_reported(tmp_path, damage):
  write_embeddings(str(tmp_path), _arrays(), IDENTITY)
  arrays, header = tmp_path / ARRAYS_NAME, tmp_path / HEADER_NAME
  data = arrays.read_bytes()
  if damage == "flip":
    arrays.write_bytes(data[:-40] + bytes([data[-40] ^ 1]) + data[-39:])
  elif damage == "truncate":
    arrays.write_bytes(data[:-10])
  elif damage == "remove":
    arrays.unlink()
  else:
    header.write_text(header.read_text()[:-5])
  with pytest.raises(EmbeddingsCorruptError, match=str(tmp_path)):
    read_embeddings(str(tmp_path), IDENTITY)
  write_embeddings(str(tmp_path), _arrays(), IDENTITY)  # a rewrite repairs it
  assert read_embeddings(str(tmp_path), IDENTITY)["images"].shape == (4, 3)


def test_header_listing_other_shapes_is_corrupt(tmp_path):
  write_embeddings(str(tmp_path), _arrays(), IDENTITY)
  header = json.loads((tmp_path / HEADER_NAME).read_text())
  header["arrays"]["images"]["shape"] = [5, 3]
  (tmp_path / HEADER_NAME).write_text(json.dumps(header))
  with pytest.raises(EmbeddingsCorruptError, match="the header lists"):
    read_embeddings(str(tmp_path), IDENTITY)


def test_bad_arrays_are_refused_before_writing(tmp_path):
  with pytest.raises(ValueError, match="nothing to store"):
    write_embeddings(str(tmp_path / "a"), {}, IDENTITY)
  with pytest.raises(ValueError, match="not a plain identifier"):
    write_embeddings(str(tmp_path / "b"), {"a/b": np.zeros(2)}, IDENTITY)
  assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
