"""``jitr-precompute``'s run: a caption file's relevance estimates -> TFRecords.

:func:`precompute_relevance` reads the captions, builds the named estimator from its
settings (:func:`~jitr.relevance.registry.make_estimator_from_settings`) and writes (or
finishes) its records with :func:`~jitr.relevance.records.write_relevance_records`.
:func:`precompute_external_scores` does the same for scores computed elsewhere (a scores
file, :class:`~jitr.relevance.external_scores.ExternalScores`), read and checked against
the captions before anything is written. Both take how the caption file is read and the
records written as one :class:`PrecomputeOptions`; :func:`precompute` runs the one that a
:class:`PrecomputeSource` (``jitr-precompute``'s flags) names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from jitr.relevance.captions_io import read_captions
from jitr.relevance.external_scores import ExternalScores, check_scores_name
from jitr.relevance.records import RecordsWriting, write_relevance_records
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


@dataclasses.dataclass(frozen=True)
class PrecomputeOptions(RecordsWriting):
  """How :func:`precompute_relevance` and :func:`precompute_external_scores` read the
  caption file and write the records (``jitr-precompute``'s flags of the same names): the
  caption file's form, and the records' :class:`~jitr.relevance.RecordsWriting`
  (``top_k`` None: the estimator's default, every caption for scores computed elsewhere)."""

  caption_format: str = "auto"
  """``auto``, ``precomp``, ``flickr8k`` or ``karpathy`` (:func:`!read_captions`)."""
  captions_per_image: int = 5
  """Lines per image of a precomp caption file; captions kept per image of a Karpathy
  split file (its first ones)."""
  splits: tuple[str, ...] = ("train", "restval")
  """The splits of a Karpathy split file whose captions are read (a run's training images:
  ``train`` and COCO's ``restval``)."""


def precompute_relevance(
  captions_path: str,
  estimator: str,
  out: str,
  *,
  settings: Mapping[str, Any],
  vectors: bool | None = None,
  options: PrecomputeOptions = PrecomputeOptions(),
) -> str:
  """Writes the ``estimator`` relevance of the captions in ``captions_path`` to ``out`` and
  returns the :func:`!progress_line` to print.

  Args:
    captions_path: precomp ``*_caps.txt``, ``Flickr8k.token.txt`` or a Karpathy split file
      (:func:`!read_captions` with ``options.caption_format``).
    estimator: a registry name; built from ``settings`` (``{name: {keyword: value}}``).
    vectors: as :func:`!write_relevance_records`.
    options: the caption file's form and how the records are written
      (:class:`PrecomputeOptions`).
  """
  captions = read_captions(
    captions_path, options.caption_format, options.captions_per_image, options.splits
  )
  options.log(f"{captions.source}: {captions.num_images} images, {captions.num_captions} captions")
  header = write_relevance_records(
    out,
    captions,
    make_estimator_from_settings(estimator, settings),
    vectors=vectors,
    writing=options,
  )
  return progress_line(header, estimator, out, captions.num_images, workers=options.workers)


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
  options: PrecomputeOptions = PrecomputeOptions(),
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
    options: :func:`precompute_relevance`'s; ``options.top_k``: the K best captions kept
      per image (default: every caption, the whole matrix).
  """
  name, path = scores_spec(scores)
  estimator = ExternalScores(name, path, scale=scale, image_ids=image_ids)
  captions = read_captions(
    captions_path, options.caption_format, options.captions_per_image, options.splits
  )
  options.log(f"{captions.source}: {captions.num_images} images, {captions.num_captions} captions")
  estimator.fit(captions)
  options.log(f"{path}: {len(estimator.scores.scores)} scored pairs")
  header = write_relevance_records(
    out,
    captions,
    estimator,
    vectors=False,
    fit=False,
    writing=dataclasses.replace(options, top_k=options.top_k or captions.num_captions),
  )
  return progress_line(header, name, out, captions.num_images, workers=options.workers)


@dataclasses.dataclass(frozen=True)
class PrecomputeSource:
  """What a precompute stores: the relevance of a registered ``estimator``, or ``scores``
  computed elsewhere (``jitr-precompute``'s ``--estimator`` or ``--scores`` and the flags
  that go with each).

  Raises:
    ValueError: both or neither of ``estimator`` and ``scores``, or ``vectors`` with
      ``scores`` (one line saying so).
  """

  estimator: str | None = None
  """A registry name (:func:`precompute_relevance`)."""
  scores: str | None = None
  """``NAME=FILE`` of scores computed elsewhere (:func:`precompute_external_scores`)."""
  vectors: bool | None = None
  """With ``estimator``: store per-caption vectors (None: the estimator's default)."""
  scale: float = 1.0
  """With ``scores``: the largest possible score; relevance = score / scale."""
  image_ids: str | None = None
  """With ``scores``: a file of the images' ids, one per line."""

  def __post_init__(self) -> None:
    if self.estimator is not None and self.scores is not None:
      raise ValueError("give --estimator or --scores, not both")
    if self.scores is not None and self.vectors:
      raise ValueError("--vectors: scores computed elsewhere have no per-caption vectors")
    if self.estimator is None and self.scores is None:
      raise ValueError(
        f"--estimator (one of: {', '.join(sorted(ESTIMATORS))}) or --scores=NAME=FILE is required"
      )


def precompute(
  captions_path: str,
  out: str,
  source: PrecomputeSource,
  *,
  settings: Mapping[str, Any],
  options: PrecomputeOptions = PrecomputeOptions(),
) -> str:
  """``source``'s records of the captions in ``captions_path``, written to ``out``
  (:func:`precompute_external_scores` for scores computed elsewhere, else
  :func:`precompute_relevance` with the estimators' ``settings``); the line to print."""
  if source.scores is not None:
    return precompute_external_scores(
      captions_path,
      source.scores,
      out,
      scale=source.scale,
      image_ids=source.image_ids,
      options=options,
    )
  return precompute_relevance(
    captions_path,
    source.estimator,
    out,
    settings=settings,
    vectors=source.vectors,
    options=options,
  )
