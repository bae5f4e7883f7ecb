"""CVSE's official concept files: the real F30K files, refused globals run nothing, one
error line per bad file."""

from __future__ import annotations

import json
import os
import pathlib
import pickle
import shutil
import struct

import numpy as np
import pytest

from jitr.data import cvse_concepts

REFUSAL = "an official CVSE concept file holds only numpy arrays and plain containers"
RECONSTRUCT = b"cnumpy.core.multiarray\n_reconstruct\n"


def write(path: pathlib.Path, data: bytes) -> str:
  path.write_bytes(data)
  return str(path)


def one_line_error(read, path, *args) -> str:
  """The message of the one-line ``ValueError`` that ``read(path, *args)`` raises; it
  names ``path``."""
  with pytest.raises(ValueError) as info:
    read(path, *args)
  message = str(info.value)
  assert "\n" not in message and message.startswith(f"{path}:"), message
  return message


def statistics_dict(c=3) -> dict:
  adj = np.arange(c * c, dtype=np.int32).reshape(c, c)
  return {"nums": np.full(c, 100, np.int32), "adj_O_P": adj, "adj_O_M": adj.T, "adj_all": adj}


# The real F30K files


def test_the_real_statistics(official):
  stats = official.statistics
  assert stats.num_concepts == official.num_concepts == 300
  assert stats.counts.dtype == np.int64 and stats.counts.shape == (300,)
  assert stats.counts[:3].tolist() == [41778, 21746, 17035]  # man, woman, people
  assert list(stats.co_occurrence) == ["adj_O_P", "adj_O_M", "adj_all"]
  for adj in stats.co_occurrence.values():
    assert adj.dtype == np.float64 and adj.shape == (300, 300) and not adj.flags.writeable
    assert (np.diag(adj) == 0).all() and (adj >= 0).all()
    assert (adj <= np.minimum.outer(stats.counts, stats.counts)).all()
  p, m, a = (stats.co_occurrence[k] for k in cvse_concepts.ADJACENCY_KEYS)
  assert not np.array_equal(p, p.T)  # object-property counts are not symmetric
  assert np.array_equal(m, m.T) and np.array_equal(a, a.T)
  assert p[0, 1] == p[1, 0] == a[0, 1] == 4450  # man & woman
  assert not p[270:].any() and p[:, 270:].any()  # no row of O_P for the 30 motion concepts
  assert (p <= a).all() and (m <= a).all()


def test_the_real_vectors_and_words(official, cvse_f30k):
  assert official.vectors.dtype == np.float32 and official.vectors.shape == (300, 300)
  assert np.isfinite(official.vectors).all() and not official.vectors.flags.writeable
  assert official.vectors[0, 0] == pytest.approx(-2.7169898)
  words = official.words
  assert words[:8] == ("man", "woman", "people", "shirt", "men", "girl", "boy", "dog")
  assert (words[100], words[200], words[230], words[270], words[299]) == (
    "workers", "fire", "striped", "is", "doing",
  )  # fmt: skip
  vocabulary = cvse_concepts.read_concept_vocabulary(cvse_f30k / "vocab_f30k_concepts.pkl")
  assert vocabulary == words


def test_the_real_labels(official):
  labels = official.labels
  assert len(labels) == 31014 and sorted(labels) == list(range(31014))
  assert labels[0] == (0, 3, 4, 39, 65, 119, 162, 210, 211, 213, 215, 232, 271, 274)
  assert all(ids and ids == tuple(sorted(set(ids))) and ids[-1] < 300 for ids in labels.values())
  assert max(len(ids) for ids in labels.values()) == 33


def test_the_real_files_are_python3_numpy_pickles(cvse_f30k):
  data = (cvse_f30k / "f30k_adj_concepts.pkl").read_bytes()
  assert data.startswith(b"\x80\x03") and RECONSTRUCT in data


# Refused pickles run nothing


class Shell:
  def __init__(self, marker):
    self.marker = marker

  def __reduce__(self):
    return (os.system, ("touch " + self.marker,))


def test_a_pickle_that_names_os_system_runs_nothing(tmp_path):
  marker = str(tmp_path / "ran")
  path = write(tmp_path / "f30k_adj_concepts.pkl", pickle.dumps({"nums": Shell(marker)}, 3))
  for read in (
    cvse_concepts.read_concept_statistics,
    cvse_concepts.read_concept_vectors,
    cvse_concepts.read_concept_vocabulary,
  ):
    message = one_line_error(read, path)
    assert message == (
      f"{path}: refusing the pickled global {os.system.__module__}.system; {REFUSAL}"
    )
  assert not os.path.exists(marker)


def reconstruct_pickle(cls: bytes) -> bytes:
  """``_reconstruct(<cls>, (0,), b"b")`` as numpy pickles an array, ``cls`` a GLOBAL."""
  return b"\x80\x03" + RECONSTRUCT + cls + b"K\x00\x85C\x01b\x87R."


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.asmatrix
def test_reconstruct_builds_only_a_plain_ndarray(tmp_path):
  path = write(tmp_path / "v.pkl", reconstruct_pickle(b"cnumpy\ndtype\n"))
  message = one_line_error(cvse_concepts.read_concept_vectors, path)
  assert "refusing numpy.core.multiarray._reconstruct(" in message
  assert message.endswith("only a plain numpy.ndarray is rebuilt")
  matrix = write(tmp_path / "m.pkl", pickle.dumps(np.asmatrix(np.eye(2)), 3))
  assert one_line_error(cvse_concepts.read_concept_vectors, matrix) == (
    f"{matrix}: refusing the pickled global numpy.matrix; {REFUSAL}"
  )
  call = write(tmp_path / "c.pkl", b"\x80\x03cnumpy\nndarray\nK\x02\x85R.")
  assert "refusing a call of numpy.ndarray" in one_line_error(
    cvse_concepts.read_concept_vectors, call
  )


def test_object_arrays_and_persistent_ids_are_refused(tmp_path):
  path = write(tmp_path / "o.pkl", pickle.dumps(np.array([1, None], dtype=object), 3))
  assert one_line_error(cvse_concepts.read_concept_vectors, path) == (
    f"{path}: refusing numpy.dtype('O8', False, True); only boolean, integer and floating "
    "dtypes are read"
  )
  persistent = write(tmp_path / "p.pkl", b"\x80\x03X\x01\x00\x00\x00aQ.")
  assert one_line_error(cvse_concepts.read_concept_vectors, persistent) == (
    f"{persistent}: refusing a pickled persistent id; {REFUSAL}"
  )


# Round trips and bad files


@pytest.mark.parametrize("protocol", [3, 4])
def test_pickles_written_by_numpy(tmp_path, protocol):
  stats = statistics_dict()
  path = write(tmp_path / "adj.pkl", pickle.dumps(stats, protocol))
  read = cvse_concepts.read_concept_statistics(path)
  assert read.counts.tolist() == [100, 100, 100] and read.num_concepts == 3
  assert np.array_equal(read.co_occurrence["adj_O_M"], stats["adj_O_M"])
  vectors = np.arange(6, dtype=np.float64).reshape(3, 2) / 4
  path = write(tmp_path / "glove.pkl", pickle.dumps(vectors, protocol))
  assert np.array_equal(cvse_concepts.read_concept_vectors(path), vectors.astype(np.float32))


@pytest.mark.parametrize(
  ("protocol", "refused"), [(2, "_codecs.encode"), (5, "numpy._core.numeric._frombuffer")]
)
def test_pickles_the_official_files_never_are(tmp_path, protocol, refused):
  path = write(tmp_path / "glove.pkl", pickle.dumps(np.zeros((2, 2)), protocol))
  assert one_line_error(cvse_concepts.read_concept_vectors, path) == (
    f"{path}: refusing the pickled global {refused}; {REFUSAL}"
  )


def test_a_python2_numpy_pickle(tmp_path):
  """``pickle.dump(numpy.array([1.5, -2.0]), f, 2)`` under Python 2: byte strings
  (SHORT_BINSTRING) for the type code and the raw data, read as Latin-1."""
  raw = struct.pack("<2d", 1.5, -2.0)
  data = (
    b"\x80\x02" + RECONSTRUCT + b"q\x01cnumpy\nndarray\nq\x02K\x00\x85U\x01b\x87R(K\x01K\x01K\x02"
    b"\x86cnumpy\ndtype\nU\x02f8K\x00K\x01\x87R(K\x03U\x01<NNNJ\xff\xff\xff\xffJ\xff\xff\xff"
    b"\xffK\x00tb\x89U\x10" + raw + b"tb."
  )  # fmt: skip
  vectors = cvse_concepts.read_concept_vectors(write(tmp_path / "glove.pkl", data))
  assert vectors.tolist() == [[1.5, -2.0]]


def test_bad_pickles_give_one_line(tmp_path, cvse_f30k):
  real = (cvse_f30k / "f30k_adj_concepts.pkl").read_bytes()
  truncated = write(tmp_path / "t.pkl", real[: len(real) // 2])
  message = one_line_error(cvse_concepts.read_concept_statistics, truncated)
  assert "truncated pickle" in message
  stats = statistics_dict()
  stats["adj_all"] = np.zeros((3, 2), np.int32)
  path = write(tmp_path / "s.pkl", pickle.dumps(stats, 3))
  assert "adj_all is a int32 array of shape (3, 2)" in one_line_error(
    cvse_concepts.read_concept_statistics, path
  )
  vectors = write(tmp_path / "v.pkl", pickle.dumps(np.zeros(3), 3))
  assert one_line_error(cvse_concepts.read_concept_vectors, vectors) == (
    f"{vectors}: the pickle is a float64 array of shape (3,); expected one finite float "
    "array [C, D]"
  )
  vocabulary = write(
    tmp_path / "w.pkl",
    pickle.dumps({"words": ["a", "a"], "counts": [1, 1], "poss": ["OBJ", "OBJ"]}, 3),
  )
  assert "holds 'a' at 0 and 1" in one_line_error(cvse_concepts.read_concept_vocabulary, vocabulary)
  empty = write(tmp_path / "e.pkl", b"")
  assert "empty file" in one_line_error(cvse_concepts.read_concept_vectors, empty)
  with pytest.raises(FileNotFoundError, match="no such file"):
    cvse_concepts.read_concept_vectors(tmp_path / "missing.pkl")


def test_bad_json_gives_one_line(tmp_path):
  def json_file(name, value):
    return write(tmp_path / name, json.dumps(value).encode())

  path = json_file("labels.json", {"img_id": "0", "concept_labels": [1]})
  assert "holds a JSON object; expected CVSE's concept labels" in one_line_error(
    cvse_concepts.read_concept_labels, path
  )
  path = json_file("l2.json", [{"img_id": "0", "concept_labels": [1, 5]}])
  assert one_line_error(cvse_concepts.read_concept_labels, path, 5) == (
    f"{path}: item 0 (img_id '0') has the concept label 5; expected integer ids >= 0 and < 5"
  )
  path = json_file("l3.json", [{"img_id": "07", "concept_labels": [1]}])
  assert "has the img_id '07'" in one_line_error(cvse_concepts.read_concept_labels, path)
  path = json_file("c.json", {"man": 0, "dog": 2})
  assert "'dog' has the id 2 at position 1" in one_line_error(
    cvse_concepts.read_category_concepts, path
  )
  path = json_file("c2.json", ["man"])
  assert "holds a JSON array" in one_line_error(cvse_concepts.read_category_concepts, path)
  path = write(tmp_path / "c3.json", b'{"man": 0')
  assert "not valid JSON" in one_line_error(cvse_concepts.read_category_concepts, path)
  labels = json_file("l4.json", [{"img_id": "3", "concept_labels": [2, 1, 2]}])
  assert dict(cvse_concepts.read_concept_labels(labels)) == {3: (1, 2)}


def test_cross_checks(tmp_path, cvse_f30k):
  folder = tmp_path / "f30k"
  shutil.copytree(cvse_f30k, folder)
  (folder / "category_concepts.json").chmod(0o644)
  words = json.loads((folder / "category_concepts.json").read_text())
  del words["doing"]
  (folder / "category_concepts.json").write_text(json.dumps(words))
  path = str(folder / "vocab_f30k_concepts.pkl")
  message = one_line_error(lambda p: cvse_concepts.read_official_concepts(folder), path)
  assert message == (
    f"{path}: has 300 words; expected the 299 concepts in {folder / 'category_concepts.json'}, "
    "in order"
  )
  with pytest.raises(ValueError, match="dataset 'coco' has no known CVSE concept files"):
    cvse_concepts.read_official_concepts(folder, dataset="coco")
