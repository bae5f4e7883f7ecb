"""Relevance TFRecords: the sharded, resumable writer and the parts of its output.

Layout of an output directory::

    OUT/relevance.json                            header (sidecar JSON)
    OUT/relevance-00000-of-00008.tfrecord         shards of tf.train.Example, one per image
    OUT/relevance-00000-of-00008.tfrecord.json    the shard's manifest, once it is complete
    ...

The parts, one module each:

* :mod:`!writer` -- the writer (:func:`write_relevance_records`) and :mod:`!writing`, its
  settings (:class:`RecordsWriting`);
* :mod:`!schema` -- the features of an image's ``tf.train.Example``;
* :mod:`!shards` -- which images go to which shard, which worker writes which shard;
* :mod:`!header` -- the header's fields and the refusal of a directory written for other
  inputs, schema or fit;
* :mod:`!manifests` -- the shard manifests and the header that any worker (re)writes from
  them;
* :mod:`~jitr.relevance.temp_files` -- the removal of files that dead writers left;
* :mod:`~jitr.relevance.checksums` -- the shards' sha256.
"""

from jitr.relevance.records.header import (
  FIT_KEY,
  FORMAT,
  HEADER_NAME,
  IDENTITY_KEYS,
  RecordsCorruptError,
  RecordsMismatchError,
  check_compatible,
  fit_digest,
  make_header,
  read_header_file,
)
from jitr.relevance.records.manifests import (
  complete_entry,
  is_complete_set,
  publish_header,
  read_manifest,
  write_manifest,
)
from jitr.relevance.records.schema import SCHEMA_VERSION, ShardData, write_shard
from jitr.relevance.records.shards import (
  check_images_per_shard,
  check_worker,
  shard_bounds,
  shard_name,
  worker_shards,
)
from jitr.relevance.records.writer import (
  compute_shard,
  preparing,
  progress_label,
  shard_share,
  write_relevance_records,
)
from jitr.relevance.records.writing import RecordsWriting

__all__ = [
  "FIT_KEY",
  "FORMAT",
  "HEADER_NAME",
  "IDENTITY_KEYS",
  "SCHEMA_VERSION",
  "RecordsCorruptError",
  "RecordsMismatchError",
  "RecordsWriting",
  "ShardData",
  "check_compatible",
  "check_images_per_shard",
  "check_worker",
  "complete_entry",
  "compute_shard",
  "fit_digest",
  "is_complete_set",
  "make_header",
  "preparing",
  "progress_label",
  "publish_header",
  "read_header_file",
  "read_manifest",
  "shard_bounds",
  "shard_name",
  "shard_share",
  "worker_shards",
  "write_manifest",
  "write_relevance_records",
  "write_shard",
]
