"""``jitr-precompute``'s run: a caption file's relevance estimates -> TFRecords.

:func:`precompute_relevance` reads the captions, builds the named estimator from its
settings (:func:`~jitr.relevance.registry.make_estimator_from_settings`) and writes (or
finishes) its records with :func:`~jitr.relevance.records.write_relevance_records`.
:func:`precompute_external_scores` does the same for scores computed elsewhere (a scores
file, :class:`~jitr.relevance.external_scores.ExternalScores`), read and checked against
the captions before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jitr.relevance.captions_io import read_captions
from jitr.relevance.external_scores import ExternalScores, check_scores_name
from jitr.relevance.records import write_relevance_records
from jitr.relevance.registry import ESTIMATORS, make_estimator_from_settings


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


def scores_spec(spec: str) -> tuple[str, str]:
  """``"NAME=FILE"`` -> ``(NAME, FILE)``: the name scores computed elsewhere are stored under
  (not one of the estimators jitr computes) and their file.

  >>> scores_spec("spice=out/spice_test.json")
  ('spice', 'out/spice_test.json')
  """
  name, sep, path = str(spec).partition("=")
  if not sep or not path:
    raise ValueError(f"scores {spec!r}: expected NAME=FILE, e.g. spice=spice_test.json")
  return check_scores_name(name, reserved=tuple(ESTIMATORS)), path


def precompute_external_scores(
  captions_path: str,
  scores: str,
  out: str,
  *,
  scale: float = 1.0,
  image_ids: str | None = None,
  caption_format: str = "auto",
  captions_per_image: int = 5,
  top_k: int | None = None,
  images_per_shard: int = 1024,
  num_workers: int = 1,
  worker_index: int = 0,
  log: Callable[[str], None] = print,
  progress: bool = False,
) -> str:
  """Writes the scores of a file computed elsewhere as the top-K relevance records of the
  captions in ``captions_path`` to ``out``; returns the :func:`!progress_line` to print.

  The file is read and checked against the captions first (a bad file: one line, nothing
  written). Pairs it does not name score 0.

  Args:
    scores: ``NAME=FILE`` (:func:`!scores_spec`): the records' estimator name and the file
      (:mod:`!jitr.relevance.scores_file`).
    scale: the largest possible score (1 for SPICE); relevance = score / scale.
    image_ids: a file of the images' ids, one per line (the scores file names images by
      them), else the caption file's ids.
    top_k: the K best captions kept per image (default: every caption, the whole matrix).

  ``caption_format``, ``captions_per_image``, ``images_per_shard``, ``num_workers``,
  ``worker_index``, ``log`` and ``progress`` are :func:`precompute_relevance`'s.
  """
  name, path = scores_spec(scores)
  estimator = ExternalScores(name, path, scale=scale, image_ids=image_ids)
  captions = read_captions(captions_path, caption_format, captions_per_image)
  log(f"{captions.source}: {captions.num_images} images, {captions.num_captions} captions")
  estimator.fit(captions)
  log(f"{path}: {len(estimator.scores.scores)} scored pairs")
  header = write_relevance_records(
    out,
    captions,
    estimator,
    vectors=False,
    top_k=top_k or captions.num_captions,
    images_per_shard=images_per_shard,
    fit=False,
    num_workers=num_workers,
    worker_index=worker_index,
    log=log,
    progress=progress,
  )
  workers = (worker_index, num_workers)
  return progress_line(header, name, out, captions.num_images, workers=workers)
