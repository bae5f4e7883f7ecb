"""Stored relevance of a training run: one records folder per dataset and estimator settings,
and the aggregate of the records header reaching the training graded matrices."""

import os

import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from jitr.data import pairs
from jitr.experiment import stored_relevance as stored_lib
from jitr.experiment.stored_relevance import caption_set, external_records_dir
from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.cider_estimator import CiderEstimator
from jitr.relevance.lsa import LsaEstimator
from jitr.relevance.precompute import PrecomputeOptions, precompute_external_scores
from jitr.training.graded import make_graded_fn
from tests.relevance.conftest import SMALL_CAPTIONS


def _config(**lsa):
  return ml_collections.ConfigDict(
    {
      "graded": {"relevance": "vectors:lsa", "semantic": "cosine:lsa", "metric": "topk:cider"},
      "estimators": {"lsa": {"k": 4, "n_iter": 5, **lsa}},
      "top_k": 6,
    }
  )


def stored_relevance(captions, config, data_dir):
  """The run's stored relevance as a data source asks for it, from ``config``'s fields."""
  return stored_lib.stored_relevance(
    captions,
    config.graded,
    data_dir,
    estimators=config.get("estimators", {}),
    top_k=config.top_k,
  )


def _caption_set(captions):
  return CaptionSet(
    source="test",
    image_ids=tuple(str(i) for i in range(5)),
    caption_ids=tuple(f"{i}#{k}" for i in range(5) for k in range(5)),
    captions=tuple(captions),
    image_offsets=np.arange(6) * 5,
  )


def _folders(root):
  return sorted(
    os.path.relpath(os.path.join(d, n), root) for d, names, _ in os.walk(root) for n in names
  )


def test_datasets_and_settings_sharing_a_data_dir_get_their_own_records(tmp_path):
  data_dir = str(tmp_path / "tfds")
  other = SMALL_CAPTIONS[5:] + SMALL_CAPTIONS[:5]  # another caption list (fingerprint)
  a_vec, a_topk, a_agg = stored_relevance(
    caption_set(SMALL_CAPTIONS, 5, "f30k_precomp/train"), _config(), data_dir
  )
  b_vec, b_topk, b_agg = stored_relevance(
    caption_set(other, 5, "jitr_shapes/tiny/train"), _config(), data_dir
  )
  c_vec, _, c_agg = stored_relevance(
    caption_set(SMALL_CAPTIONS, 5, "f30k_precomp/train"), _config(aggregate="mean"), data_dir
  )
  d_vec, _, _ = stored_relevance(
    caption_set(SMALL_CAPTIONS, 5, "f30k_precomp/train"), _config(k=5), data_dir
  )

  folders = _folders(os.path.join(data_dir, "relevance"))
  assert [f for f in folders if os.sep not in f] == ["f30k_precomp-train", "jitr_shapes-tiny-train"]
  records = [f for f in folders if f.count(os.sep) == 1]
  # f30k: cider top-6 + lsa vectors for k=4/max, k=4/mean, k=5; shapes: cider + lsa (k=4/max)
  assert len(records) == 6
  settings = sorted({f.split(os.sep)[1] for f in records})
  assert [n.rsplit("-", 1)[0] for n in settings] == ["cider-top6"] + ["lsa-vectors"] * 3
  assert not any(":" in f for f in folders)

  own, shifted = _caption_set(SMALL_CAPTIONS), _caption_set(other)
  lsa = LsaEstimator(k=4, n_iter=5).fit(own)
  np.testing.assert_allclose(a_vec["lsa"], lsa.caption_vectors(np.arange(25)), atol=1e-6)
  np.testing.assert_allclose(c_vec["lsa"], a_vec["lsa"], atol=1e-6)  # same fit, other aggregate
  assert d_vec["lsa"].shape == (25, 5) and b_vec["lsa"].shape == (25, 4)
  for topk, cs in ((a_topk, own), (b_topk, shifted)):
    want = CiderEstimator().fit(cs).top_k(np.arange(5), 6)
    np.testing.assert_array_equal(topk["cider"][0], want.indices)
    np.testing.assert_allclose(topk["cider"][1], want.scores, rtol=1e-6)
  assert a_agg == b_agg == {"lsa": "max"} and c_agg == {"lsa": "mean"}

  # a second run reads what is there (the shard files are not rewritten)
  shard = next(
    os.path.join(root, n)
    for root, _, names in os.walk(os.path.join(data_dir, "relevance", "f30k_precomp-train"))
    for n in names
    if n.endswith(".tfrecord")
  )
  before = os.stat(shard).st_mtime_ns
  again, _, _ = stored_relevance(
    caption_set(SMALL_CAPTIONS, 5, "f30k_precomp/train"), _config(), data_dir
  )
  np.testing.assert_array_equal(again["lsa"], a_vec["lsa"])
  assert os.stat(shard).st_mtime_ns == before


def test_the_records_aggregate_reaches_the_training_matrices(tmp_path):
  config = _config(aggregate="mean")
  config.graded.lsa_lists = "topk:lsa"  # vectors and top-K lists of one estimator: both stored
  vectors, topk, aggregates = stored_relevance(
    caption_set(SMALL_CAPTIONS, 5, "f30k_precomp/train"), config, str(tmp_path)
  )
  assert sorted(vectors) == ["lsa"] and sorted(topk) == ["cider", "lsa"]
  assert topk["lsa"][0].shape == (5, 6)
  caption_image = np.repeat(np.arange(5), 5)
  split = pairs.RetrievalSplit(
    images=np.zeros((5, 1), np.float32),
    tokens=np.ones((25, 3), np.int32),
    lengths=np.full(25, 3, np.int32),
    caption_image=caption_image,
    vectors=vectors,
    topk=topk,
  )
  rows = np.array([3, 11, 24, 0])  # captions of images 0, 2, 4, 0
  batch = {k: jnp.asarray(v) for k, v in pairs.make_batch(split, rows).items()}
  images = caption_image[rows]
  positives = images[None, :] == images[:, None]  # row i's image owns caption j
  out = make_graded_fn(dict(_config().graded), aggregates=aggregates)(
    batch, batch, jnp.asarray(positives)
  )

  v = vectors["lsa"].astype(np.float64)
  mean_cos = np.array([[np.mean(v[5 * i : 5 * i + 5] @ v[j]) for j in rows] for i in images])
  np.testing.assert_allclose(out["semantic"], mean_cos, atol=1e-5)
  np.testing.assert_allclose(
    out["relevance"], np.where(positives, 1.0, (1 + mean_cos) / 2), atol=1e-5
  )
  idx, scores = topk["cider"]
  want = [[dict(zip(idx[i], scores[i])).get(j, 0.0) for j in rows] for i in images]
  np.testing.assert_allclose(out["metric"], want, rtol=1e-6)
  assert np.asarray(out["metric"]).max() > 0


def test_topk_of_scores_computed_elsewhere_reads_the_records_jitr_precompute_wrote(tmp_path):
  """A ``topk:NAME`` source of no estimator jitr computes reads the records that
  ``jitr-precompute --scores=NAME=FILE`` wrote for the training caption file into
  ``<data_dir>/relevance/<dataset>-train/NAME``, as they are; without them, one line naming
  the folder and the command that writes it."""
  caps = tmp_path / "train_caps.txt"
  caps.write_text("\n".join(SMALL_CAPTIONS) + "\n")
  rng = np.random.default_rng(3)
  scores = np.round(rng.random((5, 25)), 3)
  rows = [f"{i},{j},{scores[i, j]}" for i in range(5) for j in range(25) if (i + j) % 3]
  (tmp_path / "spice.csv").write_text("image,caption,score\n" + "\n".join(rows) + "\n")
  config = ml_collections.ConfigDict({"graded": {"margin": "topk:spice"}, "top_k": 6})
  captions = caption_set(SMALL_CAPTIONS, 5, "f30k_precomp/train")
  data_dir = str(tmp_path / "tfds")
  folder = external_records_dir(data_dir, "f30k_precomp/train", "spice")
  assert folder == os.path.join(data_dir, "relevance", "f30k_precomp-train", "spice")
  with pytest.raises(ValueError) as err:
    stored_relevance(captions, config, data_dir)
  assert str(err.value) == (
    "graded source 'topk:spice': spice is not an estimator jitr computes (one of cider, lsa, "
    f"sentence, tokens) and {folder} holds no records of it: write them there with "
    "jitr-precompute --captions=<the f30k_precomp/train caption file> --scores=spice=FILE "
    f"--out={folder}"
  )
  precompute_external_scores(
    str(caps), f"spice={tmp_path / 'spice.csv'}", folder, options=PrecomputeOptions(top_k=4)
  )
  _, topk, _ = stored_relevance(captions, config, data_dir)
  indices, got = topk["spice"]
  given = np.where((np.arange(5)[:, None] + np.arange(25)) % 3 > 0, scores, 0.0)
  for i in range(5):
    best = sorted(range(25), key=lambda j: (-given[i, j], j))[:4]
    np.testing.assert_array_equal(indices[i], best)
    np.testing.assert_allclose(got[i], given[i, best], rtol=1e-6)
