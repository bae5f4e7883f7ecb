"""Labelled vectors through training and scoring: the pairs of a batch sharing a class are
positives (on one device and across eight), the ``labels`` graded source is the Jaccard
overlap of the pairs' classes, and the evaluation encoders give the two-branch network the
split's image and text vectors."""

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from jitr.data import RetrievalSplit
from jitr.models import MODELS
from jitr.training import row_exchange
from jitr.training.embed import caption_inputs, image_inputs
from jitr.training.graded import make_graded_fn
from jitr.training.score_split import score_split
from tests.losses.test_label_relevance import numpy_jaccard
from tests.training import model_zoo


def test_pairs_sharing_a_class_are_positives():
  batch = model_zoo.vector_batch()
  ids, labels = batch["image_ids"], batch["positive_classes"]
  shared = (labels.astype(int) @ labels.T.astype(int)) > 0
  positives, where = row_exchange.query_targets(batch, batch)
  np.testing.assert_array_equal(positives, shared | (ids[:, None] == ids[None, :]))
  assert shared.sum() > (ids[:, None] == ids).sum()  # the classes add positives
  del batch["positive_classes"]  # positives = "pair": the pairs of one image only
  positives, _ = row_exchange.query_targets(batch, batch)
  np.testing.assert_array_equal(positives, ids[:, None] == ids[None, :])
  np.testing.assert_array_equal(where, np.ones((8, 8), bool))


def test_each_devices_positives_are_its_rows_of_the_global_ones():
  batch = model_zoo.vector_batch()
  fields = {k: v for k, v in batch.items() if k not in MODELS["twobranch"].inputs}
  want, _ = row_exchange.query_targets(fields, fields)
  mesh = jax.make_mesh((8,), ("batch",), devices=jax.devices())

  def positives(local):
    return row_exchange.device_queries(local, None, "batch").positives

  fn = jax.jit(jax.shard_map(positives, mesh=mesh, in_specs=P("batch"), out_specs=P("batch")))
  put = lambda x: jax.device_put(x, jax.NamedSharding(mesh, P("batch")))  # noqa: E731
  np.testing.assert_array_equal(np.asarray(fn(jax.tree.map(put, fields))), np.asarray(want))


def test_the_labels_source_is_the_jaccard_overlap_with_positives_one():
  batch = model_zoo.vector_batch(seed=5)
  labels = batch["class_labels"]
  ids = batch["image_ids"]
  own = ids[:, None] == ids[None, :]
  graded = make_graded_fn({"relevance": "labels"})(batch, batch, own)["relevance"]
  np.testing.assert_allclose(graded, np.where(own, 1.0, numpy_jaccard(labels, labels)), atol=1e-6)
  assert 0 < np.min(np.where(graded > 0, graded, 1)) < 1  # partial overlaps are graded


def test_the_evaluation_encodes_the_splits_image_and_text_vectors():
  rng = np.random.default_rng(0)
  split = RetrievalSplit(
    images=rng.normal(size=(5, 6)).astype(np.float32),
    tokens=None,
    lengths=None,
    caption_image=np.arange(5),
    text_vectors=rng.normal(size=(5, 4)).astype(np.float32),
    class_labels=np.eye(3, dtype=bool)[[0, 1, 2, 0, 1]],
  )
  model = model_zoo.model("twobranch")
  assert image_inputs(split, model.inputs) == (split.images,)
  assert caption_inputs(split, model.inputs) == (split.text_vectors,)
  variables = model.init(jax.random.key(0), {"images": split.images[:2], **_texts(split)})
  sim = score_split(model, variables, split, image_batch=2, caption_batch=3)
  img = model.encode_images(variables, split.images)
  txt = model.encode_captions(variables, split.text_vectors)
  np.testing.assert_allclose(sim, np.asarray(img) @ np.asarray(txt).T, atol=1e-6)


def _texts(split):
  return {"text_vectors": split.text_vectors[:2]}


def test_a_split_has_tokens_or_text_vectors():
  images = np.zeros((2, 3), np.float32)
  with pytest.raises(ValueError, match="captions as tokens and lengths or as text_vectors"):
    RetrievalSplit(images, None, None, np.arange(2))
  with pytest.raises(ValueError, match=r"RetrievalSplit.text_vectors: 3 rows, expected 2"):
    RetrievalSplit(images, None, None, np.arange(2), text_vectors=np.zeros((3, 4)))
  with pytest.raises(ValueError, match=r"class_labels: expected \[2, C\]"):
    RetrievalSplit(
      images, None, None, np.arange(2), text_vectors=np.zeros((2, 4)), class_labels=np.ones(2)
    )
