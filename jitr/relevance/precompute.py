"""``jitr-precompute``'s run: a caption file's relevance estimates -> TFRecords.

:func:`precompute_relevance` reads the captions, builds the named estimator from its
settings (:func:`~jitr.relevance.registry.make_estimator_from_settings`) and writes (or
finishes) its records with :func:`~jitr.relevance.records.write_relevance_records`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jitr.relevance.captions_io import read_captions
from jitr.relevance.records import write_relevance_records
from jitr.relevance.registry import make_estimator_from_settings


def progress_line(
  header: dict[str, Any], estimator: str, out: str, num_images: int, *, workers: tuple[int, int]
) -> str:
  """What worker ``i`` of ``n`` (``workers = (i, n)``) reports: every shard written, or how
  many shards of ``out`` are complete so far."""
  n, done = header["num_shards"], sum(e is not None for e in header["shards"])
  if done == n:
    return f"wrote {n} shards of {estimator} relevance for {num_images} images to {out}"
  index, count = workers
  return (
    f"worker {index} of {count}: its shards are written; "
    f"{done} of {n} shards of {out} complete (the last worker completes the header)"
  )


def precompute_relevance(
  captions_path: str,
  estimator: str,
  out: str,
  *,
  settings: Mapping[str, Any],
  caption_format: str = "auto",
  captions_per_image: int = 5,
  vectors: bool | None = None,
  top_k: int | None = None,
  images_per_shard: int = 1024,
  num_workers: int = 1,
  worker_index: int = 0,
  log: Callable[[str], None] = print,
  progress: bool = False,
) -> str:
  """Writes the ``estimator`` relevance of the captions in ``captions_path`` to ``out`` and
  returns the :func:`!progress_line` to print.

  Args:
    captions_path: precomp ``*_caps.txt`` or ``Flickr8k.token.txt``
      (:func:`!read_captions` with ``caption_format``).
    estimator: a registry name; built from ``settings`` (``{name: {keyword: value}}``).
    vectors, top_k, images_per_shard, num_workers, worker_index, log, progress: as
      :func:`!write_relevance_records` (``progress``: one line on
      stderr, this worker's images done of its total, images per second, ETA).
  """
  captions = read_captions(captions_path, caption_format, captions_per_image)
  log(f"{captions.source}: {captions.num_images} images, {captions.num_captions} captions")
  header = write_relevance_records(
    out,
    captions,
    make_estimator_from_settings(estimator, settings),
    vectors=vectors,
    top_k=top_k,
    images_per_shard=images_per_shard,
    num_workers=num_workers,
    worker_index=worker_index,
    log=log,
    progress=progress,
  )
  workers = (worker_index, num_workers)
  return progress_line(header, estimator, out, captions.num_images, workers=workers)
