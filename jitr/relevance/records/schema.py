"""The contents of a relevance TFRecord shard: one ``tf.train.Example`` per image.

**Example features** (schema version :data:`SCHEMA_VERSION`; images in dataset order):

=====================  =======  ==============================================================
key                    type     value
=====================  =======  ==============================================================
``image/index``        int64    index of the image in the caption set (0-based)
``image/id``           bytes    image id (precomp: ``str(index)``; Flickr8k: ``X.jpg``)
``caption/indices``    int64    ``[n_i]`` caption indices of the image's captions
``caption/ids``        bytes    ``[n_i]`` their caption ids
``caption/vectors``    float    ``[n_i * D]`` row-major unit-norm caption vectors; the image's
                                references are its captions, so these are also its reference
                                vectors (only when ``contents.vectors``)
``topk/indices``       int64    ``[K]`` caption indices of the K best captions, best first
                                (only when ``contents.top_k``)
``topk/scores``        float    ``[K]`` their raw estimator scores
=====================  =======  ==============================================================

Examples are serialised with ``SerializeToString(deterministic=True)``, so a shard's
bytes depend only on its data.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jitr import fileio
from jitr.relevance.captions_io import CaptionSet
from jitr.tf_cpu import import_tf

SCHEMA_VERSION = 1


@dataclasses.dataclass(frozen=True)
class ShardData:
  """What one shard holds, as numpy arrays (rows = images of the shard)."""

  image_indices: np.ndarray  # [n] int64
  vectors: list[np.ndarray] | None  # per image [n_i, D] float32
  topk_indices: np.ndarray | None  # [n, K] int64
  topk_scores: np.ndarray | None  # [n, K] float32


def serialize_example(
  captions: CaptionSet,
  image: int,
  vectors: np.ndarray | None,
  topk_idx: np.ndarray | None,
  topk_val: np.ndarray | None,
) -> bytes:
  """One ``tf.train.Example`` (see the schema in the module docstring)."""
  tf = import_tf()
  lo, hi = int(captions.image_offsets[image]), int(captions.image_offsets[image + 1])

  def ints(v):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(x) for x in v]))

  def floats(v):
    return tf.train.Feature(
      float_list=tf.train.FloatList(value=np.asarray(v, np.float32).ravel().tolist())
    )

  def strs(v):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[s.encode("utf-8") for s in v]))

  feature = {
    "image/index": ints([image]),
    "image/id": strs([captions.image_ids[image]]),
    "caption/indices": ints(range(lo, hi)),
    "caption/ids": strs(captions.caption_ids[lo:hi]),
  }
  if vectors is not None:
    feature["caption/vectors"] = floats(vectors)
  if topk_idx is not None:
    feature["topk/indices"] = ints(topk_idx)
    feature["topk/scores"] = floats(topk_val)
  example = tf.train.Example(features=tf.train.Features(feature=feature))
  return example.SerializeToString(deterministic=True)


def write_shard(path: str, captions: CaptionSet, data: ShardData) -> int:
  """Write ``data`` to the TFRecord file ``path`` atomically; returns the number of records.

  An interrupted write leaves ``NAME.tmp-*`` behind (see :mod:`jitr.relevance.temp_files`).
  """
  tf = import_tf()
  with fileio.atomic_path(path, keep_partial=True) as tmp, tf.io.TFRecordWriter(tmp) as writer:
    for row, image in enumerate(data.image_indices):
      writer.write(
        serialize_example(
          captions,
          int(image),
          None if data.vectors is None else data.vectors[row],
          None if data.topk_indices is None else data.topk_indices[row],
          None if data.topk_scores is None else data.topk_scores[row],
        )
      )
  return len(data.image_indices)
