"""Tiny members of every registered network and a batch for the model-API tests: region
features and captions, or labelled vectors for the two-branch network."""

import jax
import numpy as np

from jitr.models import make_model
from jitr.models.cvse.adapter import ConceptInputs
from tests.training import tiny

VOCAB = 20
REGIONS = 3
FEATURES = 6
SGRAF = dict(
  img_dim=FEATURES,
  word_dim=8,
  embed_dim=16,
  sim_dim=8,
  sgr_step=2,
  num_region=REGIONS,
  text_dropout=0.0,
  sa_dropout=0.0,
  block_size=4,
  length_buckets=2,  # two compiled scoring branches (the cut is exact; 8 by default)
)
CONFIGS = {
  "vse": dict(embed_dim=16, word_dim=8),  # no name: the registry's default
  "sgr": dict(name="sgr", **SGRAF),
  "saf": dict(name="saf", **SGRAF),
  "vsrn": dict(
    name="vsrn",
    word_dim=8,
    embed_dim=16,
    gcn_layers=2,
    feature_batch_norm=True,  # F30K's BatchNorm too: both VSRN BatchNorms are synced
    caption_hidden_dim=8,
    caption_word_dim=8,
    caption_dropout=0.0,
    caption_weight=0.5,
  ),
  "cvse": dict(
    name="cvse",
    img_dim=FEATURES,
    word_dim=8,
    embed_dim=16,
    num_region=REGIONS,
    dropout=0.0,
  ),
  "vseinf": dict(
    name="vseinf",
    img_dim=FEATURES,
    embed_dim=16,
    bert_hidden=8,
    bert_layers=1,
    bert_heads=2,
    bert_intermediate=8,
    bert_dropout=0.0,
  ),
  "twobranch": dict(name="twobranch", image_hidden=(8,), text_hidden=(7,), embed_dim=16),
}
# The networks of labelled vectors: their batches are :func:`vector_batch`'s.
VECTOR_NETWORKS = ("twobranch",)
TEXT_DIM = 5
CLASSES = 3
CONCEPTS = 5


def concepts(seed=7):
  """A random concept graph of :data:`CONCEPTS` concepts (4-d word vectors)."""
  rng = np.random.default_rng(seed)
  co = rng.integers(0, 6, (CONCEPTS, CONCEPTS))
  co = np.triu(co, 1) + np.triu(co, 1).T
  counts = co.max(axis=1) + rng.integers(1, 4, CONCEPTS)
  return ConceptInputs(rng.normal(size=(CONCEPTS, 4)).astype(np.float32), co, counts)


def model(name, **overrides):
  return make_model({**CONFIGS[name], **overrides}, VOCAB, {"concepts": concepts()})


def region_batch(seed=3, n_images=4, captions_per_image=2):
  """``tiny.make_batch`` with ``[B, 3, 6]`` region features (some padded) and its ids."""
  batch = tiny.make_batch(seed=seed, n_images=n_images, captions_per_image=captions_per_image)
  rng = np.random.default_rng(seed + 100)
  ids = batch["image_ids"]
  regions = rng.normal(size=(n_images, REGIONS, FEATURES)).astype(np.float32)
  counts = np.array([REGIONS, 2] * n_images)[:n_images]
  batch["images"] = regions[ids]
  batch["image_mask"] = (np.arange(REGIONS)[None, :] < counts[:, None])[ids]
  labels = rng.uniform(size=(n_images, CONCEPTS)) < 0.4
  batch["concept_labels"] = labels.astype(np.float32)[ids]
  return batch


def vector_batch(seed=3, n_images=4, captions_per_image=2):
  """:func:`region_batch`'s pairs as labelled vectors: each image the mean of its regions
  ``[B, 6]``, each caption a text vector ``[B, 5]``, and each image's classes (one to
  three of :data:`CLASSES`) as ``class_labels`` and ``positive_classes``."""
  regions = region_batch(seed, n_images, captions_per_image)
  rng = np.random.default_rng(seed + 200)
  ids = regions["image_ids"]
  labels = rng.uniform(size=(n_images, CLASSES)) < 0.4
  labels[np.arange(n_images), rng.integers(0, CLASSES, n_images)] = True
  return {
    "images": regions["images"].mean(axis=1),
    "text_vectors": rng.normal(size=(len(ids), TEXT_DIM)).astype(np.float32),
    "image_ids": ids,
    "valid": regions["valid"],
    "class_labels": labels[ids],
    "positive_classes": labels[ids],
  }


def batch(name, seed=3):
  """The batch network ``name`` reads: :func:`vector_batch` or :func:`region_batch`."""
  return vector_batch(seed) if name in VECTOR_NETWORKS else region_batch(seed)


def perturbed(variables, seed=0, scale=0.1):
  """``variables`` with every parameter moved by ``scale·N(0, 1)`` (so zero-initialised
  BatchNorm scales, e.g. VSRN's ``Rs_GCN``, let the batch statistics matter). Drawn with
  numpy: no per-shape XLA compilation of the draw."""
  rng = np.random.default_rng(seed)

  def move(p):
    p = np.asarray(p)
    return (p + scale * rng.standard_normal(p.shape)).astype(p.dtype)

  return {**variables, "params": jax.tree.map(move, variables["params"])}
