"""Relevance TFRecords: round trip, resume, refusals, truncation."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from jitr import fileio, losses
from jitr.data.relevance_reader import (
  RelevanceRecordsError,
  load_header,
  load_relevance_table,
  relevance_dataset,
)
from jitr.relevance.captions_io import read_precomp_captions
from jitr.relevance.checksums import ChecksumCache, file_sha256
from jitr.relevance.cider_estimator import CiderEstimator
from jitr.relevance.lsa import LsaEstimator
from jitr.relevance.records import RecordsWriting, write_relevance_records
from jitr.relevance.records import manifests as record_manifests
from jitr.relevance.records import schema as record_schema
from jitr.relevance.records import writer as records
from jitr.relevance.records.header import RecordsCorruptError, RecordsMismatchError, fit_digest
from jitr.relevance.records.shards import worker_shards
from jitr.relevance.temp_files import remove_stale_tmp_files


def quiet(_: str) -> None:
  pass


def test_round_trip_topk_and_inbatch_matrix(small_caps_file, tmp_path):
  cs = read_precomp_captions(str(small_caps_file))
  est = CiderEstimator()
  header = write_relevance_records(
    str(tmp_path / "rel"), cs, est, writing=RecordsWriting(top_k=6, images_per_shard=2, log=quiet)
  )
  assert header["num_shards"] == 3 and header["schema_version"] == 1
  assert header["dataset"]["fingerprint"] == cs.fingerprint()
  assert header["relevance"] == {"kind": "score", "scale": 10.0}
  assert header["contents"] == {"vectors": False, "dim": None, "top_k": 6}
  assert sorted(os.listdir(tmp_path / "rel")) == [
    "relevance-00000-of-00003.tfrecord",
    "relevance-00000-of-00003.tfrecord.json",
    "relevance-00001-of-00003.tfrecord",
    "relevance-00001-of-00003.tfrecord.json",
    "relevance-00002-of-00003.tfrecord",
    "relevance-00002-of-00003.tfrecord.json",
    "relevance.json",
  ]

  table = load_relevance_table(
    str(tmp_path / "rel"), expected_fingerprint=cs.fingerprint(), verify_checksums=True
  )
  dense = est.image_scores(np.arange(5))
  top = est.top_k(np.arange(5), 6)
  np.testing.assert_array_equal(table.topk_indices, top.indices)
  np.testing.assert_array_equal(table.topk_scores, top.scores)
  assert list(table.caption_ids) == list(cs.caption_ids) and list(table.image_ids) == list(
    cs.image_ids
  )

  first = next(relevance_dataset(str(tmp_path / "rel")).as_numpy_iterator())
  assert first["image_id"] == b"0" and first["caption_indices"].tolist() == [0, 1, 2, 3, 4]

  images, caps = np.array([0, 3, 1]), np.arange(25)
  positives = caps[None, :] // 5 == images[:, None]
  rel = np.asarray(
    losses.relevance_from_topk(
      table.topk_indices[images],
      table.topk_scores[images],
      caps,
      scale=table.relevance_scale,
      positives=positives,
    )
  )
  expected = np.zeros((3, 25))
  for a, i in enumerate(images):
    for k in range(6):
      expected[a, top.indices[i, k]] = min(top.scores[i, k] / 10.0, 1.0)
    expected[a, 5 * i : 5 * i + 5] = 1.0
  np.testing.assert_allclose(rel, expected, rtol=1e-6)
  assert rel.min() >= 0 and rel.max() <= 1
  # captions outside the top-K are 0; a top-K caption of another image keeps its CIDEr-D / 10
  other = [j for j in top.indices[0] if j // 5 != 0]
  assert other and np.isclose(rel[0, other[0]], dense[0, other[0]] / 10, rtol=1e-6)


def test_round_trip_vectors(small_caps_file, tmp_path):
  cs = read_precomp_captions(str(small_caps_file))
  est = LsaEstimator(k=6, n_iter=20)
  write_relevance_records(
    str(tmp_path / "rel"), cs, est, writing=RecordsWriting(images_per_shard=4, log=quiet)
  )
  table = load_relevance_table(str(tmp_path / "rel"))
  assert table.topk_indices is None and table.caption_vectors.shape == (25, 6)
  np.testing.assert_allclose(table.caption_vectors, est.caption_vectors(np.arange(25)), rtol=1e-6)
  refs = table.caption_vectors.reshape(5, 5, 6)[[2, 4]]  # each image's captions: its references
  positives = np.arange(25)[None, :] // 5 == np.array([[2], [4]])
  rel = np.asarray(
    losses.relevance_from_embeddings(refs, table.caption_vectors, positives=positives)
  )
  expected = est.image_scores(np.array([2, 4]))
  np.testing.assert_allclose(rel, np.where(positives, 1.0, expected), atol=1e-5)
  # mean over the references: the numpy form, own captions set to 1
  v = table.caption_vectors.astype(np.float64)
  mean = (1 + (v @ v.T).reshape(5, 5, 25).mean(axis=1)) / 2
  mean[np.repeat(np.arange(5), 5), np.arange(25)] = 1.0
  rel_mean = np.asarray(
    losses.relevance_from_embeddings(
      refs, table.caption_vectors, positives=positives, aggregate="mean"
    )
  )
  np.testing.assert_allclose(rel_mean, mean[[2, 4]], atol=1e-5)


def test_resume_after_interrupted_write(small_caps_file, tmp_path, monkeypatch):
  cs = read_precomp_captions(str(small_caps_file))
  out = str(tmp_path / "rel")
  calls = {"n": 0}
  real = record_schema.serialize_example

  def dies_on_the_fourth_record(*args, **kwargs):
    calls["n"] += 1
    if calls["n"] == 4:  # inside the second shard: shard 1 is complete, shard 2 half written
      raise KeyboardInterrupt("interrupted")
    return real(*args, **kwargs)

  monkeypatch.setattr(record_schema, "serialize_example", dies_on_the_fourth_record)
  with pytest.raises(KeyboardInterrupt):
    write_relevance_records(
      out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet)
    )
  names = sorted(os.listdir(out))
  assert names[:2] == [
    "relevance-00000-of-00003.tfrecord",
    "relevance-00000-of-00003.tfrecord.json",
  ]
  assert names[2].startswith("relevance-00001-of-00003.tfrecord.tmp-") and len(names) == 4
  with pytest.raises(RelevanceRecordsError, match="shard 2 of 3 is not complete"):
    load_header(out)
  done = os.stat(os.path.join(out, names[0])).st_mtime_ns

  monkeypatch.setattr(record_schema, "serialize_example", real)
  lines: list[str] = []
  write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=lines.append)
  )
  assert lines[0].startswith("removing unfinished file relevance-00001-of-00003.tfrecord.tmp-")
  assert "shard 1/3: complete, skipped" in lines
  assert os.stat(os.path.join(out, names[0])).st_mtime_ns == done
  assert not [n for n in os.listdir(out) if ".tmp-" in n]

  write_relevance_records(
    str(tmp_path / "clean"),
    cs,
    CiderEstimator(),
    writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet),
  )
  resumed, clean = load_relevance_table(out), load_relevance_table(str(tmp_path / "clean"))
  np.testing.assert_array_equal(resumed.topk_indices, clean.topk_indices)
  np.testing.assert_array_equal(resumed.topk_scores, clean.topk_scores)


def test_mismatched_fingerprint_and_schema_are_refused(small_caps_file, small_captions, tmp_path):
  cs = read_precomp_captions(str(small_caps_file))
  out = str(tmp_path / "rel")
  write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet)
  )
  before = {n: os.path.getsize(os.path.join(out, n)) for n in os.listdir(out)}

  other_file = tmp_path / "other_caps.txt"
  other_file.write_text("\n".join(small_captions[5:] + small_captions[:5]) + "\n")
  other = read_precomp_captions(str(other_file))
  with pytest.raises(
    RecordsMismatchError, match=r"relevance.json: computed for another caption list"
  ):
    write_relevance_records(
      out, other, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet)
    )
  with pytest.raises(RecordsMismatchError, match=r"field 'params'"):
    write_relevance_records(
      out,
      cs,
      CiderEstimator(sigma=3.0),
      writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet),
    )
  with pytest.raises(RecordsMismatchError, match=r"field 'contents'"):
    write_relevance_records(
      out, cs, CiderEstimator(), writing=RecordsWriting(top_k=7, images_per_shard=2, log=quiet)
    )
  with pytest.raises(RelevanceRecordsError, match=r"dataset.fingerprint"):
    load_header(out, expected_fingerprint=other.fingerprint())
  assert {
    n: os.path.getsize(os.path.join(out, n)) for n in os.listdir(out)
  } == before  # nothing damaged

  path = os.path.join(out, "relevance.json")
  header = json.load(open(path))
  header["schema_version"] = 2
  json.dump(header, open(path, "w"))
  with pytest.raises(
    RecordsMismatchError, match="written with schema version 2, this jitr writes version 1"
  ):
    write_relevance_records(
      out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet)
    )
  with pytest.raises(
    RelevanceRecordsError, match=r"'schema_version' is 2, this reader supports \[1\]"
  ):
    load_header(out)


@pytest.mark.parametrize(
  ("damage", "message"),
  [
    (
      lambda h: h["dataset"].pop("fingerprint"),
      "field 'dataset.fingerprint' is None, expected a string",
    ),
    (lambda h: h.update(dataset=[1, 2]), "field 'dataset' is [1, 2], expected an object"),
    (lambda h: h.update(num_shards="3"), "field 'num_shards' is '3', expected an integer"),
    (lambda h: h["shards"].pop(), "field 'shards' has 2 entries, 'num_shards' is 3"),
    (
      lambda h: h["shards"][1].update(bytes=True),
      "field 'shards[1].bytes' is True, expected an integer",
    ),
    (lambda h: h["shards"].__setitem__(0, 7), "field 'shards[0].file' is None, expected a string"),
  ],
)
def test_malformed_header_fields_are_named(small_caps_file, tmp_path, damage, message):
  """A header damaged by hand: one error naming the field (never a KeyError/TypeError from
  building the message)."""
  cs = read_precomp_captions(str(small_caps_file))
  out = str(tmp_path / "rel")
  write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet)
  )
  path = os.path.join(out, "relevance.json")
  with open(path) as f:
    header = json.load(f)
  damage(header)
  with open(path, "w") as f:
    json.dump(header, f)
  with pytest.raises(RelevanceRecordsError) as err:
    load_header(out, expected_fingerprint=cs.fingerprint())
  assert str(err.value).startswith(f"{path}: {message}")


def test_truncated_shard_is_refused_then_rewritten(small_caps_file, tmp_path):
  cs = read_precomp_captions(str(small_caps_file))
  out = str(tmp_path / "rel")
  write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet)
  )
  good = load_relevance_table(out)
  shard = os.path.join(out, "relevance-00001-of-00003.tfrecord")
  size = os.path.getsize(shard)
  with open(shard, "r+b") as f:
    f.truncate(size - 10)
  with pytest.raises(
    RelevanceRecordsError,
    match=rf"relevance-00001-of-00003.tfrecord: {size - 10} bytes, the header records {size}",
  ):
    load_relevance_table(out)
  lines: list[str] = []
  write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=lines.append)
  )
  assert lines == [
    "shard 1/3: complete, skipped",
    "shard 2/3: relevance-00001-of-00003.tfrecord is missing, truncated or corrupt (sha256); "
    "rewriting it",
    "shard 2/3: wrote 2 images to relevance-00001-of-00003.tfrecord",
    "shard 3/3: complete, skipped",
  ]
  np.testing.assert_array_equal(
    load_relevance_table(out, verify_checksums=True).topk_scores, good.topk_scores
  )


def test_flipped_bytes_of_unchanged_size_are_refused_then_rewritten(small_caps_file, tmp_path):
  """Completeness includes the shard's sha256: readers refuse it by default, naming the file
  and the command that repairs it, and a re-run rewrites exactly that shard."""
  cs = read_precomp_captions(str(small_caps_file))
  out = str(tmp_path / "rel")
  write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet)
  )
  before = folder_bytes(out)
  shard = os.path.join(out, "relevance-00001-of-00003.tfrecord")
  data = bytearray(before["relevance-00001-of-00003.tfrecord"])
  data[len(data) // 2] ^= 0xFF
  with open(shard, "wb") as f:
    f.write(bytes(data))
  with pytest.raises(RelevanceRecordsError) as err:
    load_relevance_table(out)  # verify_checksums is the default
  assert str(err.value) == (
    f"{shard}: sha256 differs from the header's (corrupt or modified); "
    "re-run jitr-precompute (or jitr-train) with the same arguments to rewrite it"
  )
  lines: list[str] = []
  write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=lines.append)
  )
  assert lines[1:3] == [
    "shard 2/3: relevance-00001-of-00003.tfrecord is missing, truncated or corrupt (sha256); "
    "rewriting it",
    "shard 2/3: wrote 2 images to relevance-00001-of-00003.tfrecord",
  ]
  assert folder_bytes(out) == before  # repaired byte for byte


def test_non_finite_scores_are_refused_with_the_shard_and_image(small_caps_file, tmp_path):
  cs = read_precomp_captions(str(small_caps_file))
  out = str(tmp_path / "rel")
  write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet)
  )
  # Rewrite shard 2 (images 2, 3) with a NaN score, as a buggy writer would, header included.
  from jitr.tf_cpu import import_tf

  tf = import_tf()
  name = "relevance-00001-of-00003.tfrecord"
  path = os.path.join(out, name)
  examples = [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(path)]
  examples[1].features.feature["topk/scores"].float_list.value[2] = float("nan")
  with tf.io.TFRecordWriter(path) as writer:
    for ex in examples:
      writer.write(ex.SerializeToString(deterministic=True))
  header = json.load(open(os.path.join(out, "relevance.json")))
  header["shards"][1].update(bytes=os.path.getsize(path), sha256=file_sha256(path))
  with open(os.path.join(out, "relevance.json"), "w") as f:
    json.dump(header, f)
  with pytest.raises(
    RelevanceRecordsError,
    match=rf"^{path}: topk/scores of image 3 is not finite \(1 non-finite values in {out}\)",
  ):
    load_relevance_table(out)


def test_vectors_of_a_non_cosine_estimator_are_refused(small_caps_file, tmp_path):
  cs = read_precomp_captions(str(small_caps_file))
  with pytest.raises(ValueError, match="the cider estimator has no per-caption vectors"):
    write_relevance_records(
      str(tmp_path / "rel"), cs, CiderEstimator(), vectors=True, writing=RecordsWriting(log=quiet)
    )


# ------------------------------------------------------------------ work split over workers
def folder_bytes(folder) -> dict[str, bytes]:
  return {
    name: open(os.path.join(folder, name), "rb").read() for name in sorted(os.listdir(folder))
  }


def test_worker_shards_split_round_robin():
  assert worker_shards(5, 2, 0) == [0, 2, 4]
  assert worker_shards(5, 2, 1) == [1, 3]
  assert worker_shards(2, 4, 3) == []  # more workers than shards: the last ones idle
  assert worker_shards(3) == [0, 1, 2]
  for n in range(1, 9):
    for workers in range(1, 6):
      parts = [worker_shards(n, workers, i) for i in range(workers)]
      assert sorted(s for part in parts for s in part) == list(range(n))  # disjoint, complete


@pytest.mark.parametrize(
  ("workers", "index", "message"),
  [
    (2, 2, r"worker_index=2 is outside \[0, num_workers=2\): expected one of 0\.\.1"),
    (2, -1, r"worker_index=-1 is outside \[0, num_workers=2\)"),
    (0, 0, r"num_workers=0: expected a whole number of workers >= 1"),
    (-3, 0, r"num_workers=-3: expected a whole number of workers >= 1"),
    (2.0, 0, r"num_workers=2\.0: expected a whole number"),
  ],
)
def test_bad_worker_settings_are_refused_before_anything_is_written(
  small_caps_file, tmp_path, workers, index, message
):
  cs = read_precomp_captions(str(small_caps_file))
  out = tmp_path / "rel"
  with pytest.raises(ValueError, match=message):
    write_relevance_records(
      str(out),
      cs,
      CiderEstimator(),
      writing=RecordsWriting(top_k=5, num_workers=workers, worker_index=index, log=quiet),
    )
  assert not out.exists()


def test_two_workers_write_the_bytes_of_one_process(small_caps_file, tmp_path):
  cs = read_precomp_captions(str(small_caps_file))
  one, split = str(tmp_path / "one"), str(tmp_path / "split")
  write_relevance_records(
    one, cs, CiderEstimator(), writing=RecordsWriting(top_k=6, images_per_shard=2, log=quiet)
  )

  lines: list[str] = []
  first = write_relevance_records(
    split,
    cs,
    CiderEstimator(),
    writing=RecordsWriting(
      top_k=6, images_per_shard=2, num_workers=2, worker_index=0, log=lines.append
    ),
  )
  assert lines == [
    "worker 0 of 2: 2 of 3 shards",
    "shard 1/3: wrote 2 images to relevance-00000-of-00003.tfrecord",
    "shard 3/3: wrote 1 images to relevance-00002-of-00003.tfrecord",
    f"2 of 3 shards complete: the worker that finishes last completes {split}/relevance.json",
  ]
  assert [e is not None for e in first["shards"]] == [True, False, True]
  with pytest.raises(RelevanceRecordsError, match="shard 2 of 3 is not complete"):
    load_header(split)  # readers refuse the set until the last worker is done

  last = write_relevance_records(
    split,
    cs,
    CiderEstimator(),
    writing=RecordsWriting(top_k=6, images_per_shard=2, num_workers=2, worker_index=1, log=quiet),
  )
  assert all(last["shards"])
  assert folder_bytes(split) == folder_bytes(one)  # every file, byte for byte
  load_header(split, verify_checksums=True)

  # a finished set re-run by any worker, with any worker count, is left as it is
  lines.clear()
  write_relevance_records(
    split,
    cs,
    CiderEstimator(),
    writing=RecordsWriting(
      top_k=6, images_per_shard=2, num_workers=3, worker_index=2, log=lines.append
    ),
  )
  assert lines == [f"{split}: every shard complete, reused without fitting the estimator"]
  assert folder_bytes(split) == folder_bytes(one)


def test_a_worker_with_other_settings_is_refused_and_damages_nothing(small_caps_file, tmp_path):
  cs = read_precomp_captions(str(small_caps_file))
  out = str(tmp_path / "rel")
  kwargs = {"images_per_shard": 2, "num_workers": 2, "log": quiet}
  write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, worker_index=0, **kwargs)
  )
  before = folder_bytes(out)
  header_path = os.path.join(out, "relevance.json")
  with pytest.raises(RecordsMismatchError, match=rf"{header_path}: field 'contents'"):
    write_relevance_records(
      out, cs, CiderEstimator(), writing=RecordsWriting(top_k=7, worker_index=1, **kwargs)
    )
  with pytest.raises(RecordsMismatchError, match=rf"{header_path}: field 'images_per_shard' is 2"):
    write_relevance_records(
      out,
      cs,
      CiderEstimator(),
      writing=RecordsWriting(top_k=5, images_per_shard=3, num_workers=2, worker_index=1, log=quiet),
    )
  assert folder_bytes(out) == before


def test_fit_digest_is_deterministic_and_a_different_fit_is_refused(
  small_caps_file, tmp_path, monkeypatch
):
  cs = read_precomp_captions(str(small_caps_file))
  cider = fit_digest(CiderEstimator().fit(cs), cs)
  assert cider == fit_digest(CiderEstimator().fit(cs), cs)
  assert cider != fit_digest(CiderEstimator(sigma=3.0).fit(cs), cs)
  lsa = fit_digest(LsaEstimator(k=6, n_iter=20).fit(cs), cs)
  assert lsa == fit_digest(LsaEstimator(k=6, n_iter=20).fit(cs), cs)
  assert lsa != fit_digest(LsaEstimator(k=6, n_iter=20, seed=1).fit(cs), cs)

  out = str(tmp_path / "rel")
  kwargs = {"top_k": 5, "images_per_shard": 2, "num_workers": 2, "log": quiet}
  header = write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(worker_index=0, **kwargs)
  )
  assert header["fit_sha256"] == cider
  before = folder_bytes(out)
  monkeypatch.setattr(records, "fit_digest", lambda *_: "f" * 64)  # a worker that fits otherwise
  with pytest.raises(RecordsMismatchError, match=r"relevance.json: written by an estimator fitted"):
    write_relevance_records(
      out, cs, CiderEstimator(), writing=RecordsWriting(worker_index=1, **kwargs)
    )
  os.remove(os.path.join(out, "relevance.json"))  # without the header, the manifests refuse it
  with pytest.raises(
    RecordsMismatchError,
    match=r"relevance-00000-of-00003.tfrecord.json: written by an estimator fitted differently "
    rf"\(fit digest {cider[:12]}\.\.\., this worker's fit has ffffffffffff\.\.\.\)",
  ):
    write_relevance_records(
      out, cs, CiderEstimator(), writing=RecordsWriting(worker_index=1, **kwargs)
    )
  assert folder_bytes(out) == {k: v for k, v in before.items() if k != "relevance.json"}


def test_only_temporary_files_of_dead_processes_of_this_host_are_removed(tmp_path):
  dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], stdout=-1)
  dead_pid = int(dead.stdout)
  host = fileio.host_tag()
  assert fileio.temp_name("x").startswith(f"x.tmp-{host}-{os.getpid()}-")
  names = {
    "dead": f"relevance.json.tmp-{host}-{dead_pid}-0a1b2c3d",
    "dead_digit_hex": f"relevance-00002-of-00003.tfrecord.tmp-{host}-{dead_pid}-20251126",
    "mine": f"relevance-00000-of-00002.tfrecord.tmp-{host}-{os.getpid()}-00ff00ff",
    "alive": f"relevance-00001-of-00002.tfrecord.tmp-{host}-{os.getppid()}-12345678",
    "other_host": f"relevance.json.tmp-elsewhere-{dead_pid}-abcdef01",
  }
  for name in names.values():
    (tmp_path / name).write_text("partial")
  lines: list[str] = []
  remove_stale_tmp_files(str(tmp_path), lines.append)
  assert sorted(os.listdir(tmp_path)) == sorted([names["alive"], names["other_host"]])
  removed = ("dead", "dead_digit_hex", "mine")
  assert sorted(lines) == sorted(f"removing unfinished file {names[k]}" for k in removed)


def test_a_late_stale_header_write_is_corrected_by_its_writer(
  small_caps_file, tmp_path, monkeypatch
):
  """Worker A scans the manifests, B completes the set, then A's older header lands: A re-reads
  the manifests after writing and rewrites the header, so the last header is complete."""
  cs = read_precomp_captions(str(small_caps_file))
  out = str(tmp_path / "rel")
  write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet)
  )
  complete = folder_bytes(out)
  header = json.loads(complete["relevance.json"])
  identity = {k: v for k, v in header.items() if k != "shards"}
  real = record_manifests.collect_header
  scans = []

  def first_scan_before_the_last_manifest(out_dir, ident, checksums):
    scans.append(1)
    got = real(out_dir, ident, checksums)
    return {**got, "shards": [*got["shards"][:2], None]} if len(scans) == 1 else got

  monkeypatch.setattr(record_manifests, "collect_header", first_scan_before_the_last_manifest)
  assert record_manifests.publish_header(out, identity, ChecksumCache()) == header
  assert len(scans) == 3  # stale scan + write, re-scan differs, write + re-scan agrees
  assert folder_bytes(out) == complete


@pytest.mark.parametrize(
  ("text", "error", "message"),
  [
    ("[1, 2]\n", RecordsMismatchError, "relevance.json: field 'format' is 'list', expected "),
    (
      '{"format":\n',
      RecordsCorruptError,
      "relevance.json:2: not valid JSON (Expecting value, column 1); delete the directory",
    ),
  ],
)
def test_a_damaged_header_stops_the_writer_with_one_line(
  small_caps_file, tmp_path, text, error, message
):
  """A re-run over a folder whose header is not a JSON object (or not JSON) names the
  file, and touches nothing."""
  cs = read_precomp_captions(str(small_caps_file))
  out = tmp_path / "rel"
  out.mkdir()
  (out / "relevance.json").write_text(text)
  with pytest.raises(error) as err:
    write_relevance_records(
      str(out), cs, CiderEstimator(), writing=RecordsWriting(top_k=5, log=quiet)
    )
  assert message in str(err.value)
  assert sorted(os.listdir(out)) == ["relevance.json"]
  assert (out / "relevance.json").read_text() == text


def test_a_complete_set_is_reused_without_fitting(small_caps_file, tmp_path, monkeypatch):
  """A later run only reads a finished set: no fit (minutes for the tokens estimator), no
  write; an incomplete set, or one storing other contents, still fits and writes."""
  cs = read_precomp_captions(str(small_caps_file))
  out = str(tmp_path / "rel")
  first = write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet)
  )
  before = folder_bytes(out)

  def no_fit(self, captions):
    raise AssertionError("fitted a complete set")

  monkeypatch.setattr(CiderEstimator, "fit", no_fit)
  lines = []
  again = write_relevance_records(
    out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=lines.append)
  )
  assert again == first and folder_bytes(out) == before
  assert lines == [f"{out}: every shard complete, reused without fitting the estimator"]
  os.remove(os.path.join(out, first["shards"][1]["file"]))  # damaged: the fit is needed again
  with pytest.raises(AssertionError, match="fitted a complete set"):
    write_relevance_records(
      out, cs, CiderEstimator(), writing=RecordsWriting(top_k=5, images_per_shard=2, log=quiet)
    )
