"""``jitr-relevance-quality``'s run: each graded source, calibrated or not, against the truth.

For each split of ``jitr_shapes`` (built under ``data_dir`` if absent), each graded source
(the language of ``config.graded``, :func:`jitr.training.graded.parse_source`: ``oracle``,
``constant``, ``vectors:NAME``, ``coverage:NAME``, ``topk:NAME``, ``teacher:WORKDIR``,
``hmean:A|B`` / ``mean:A|B``) and each calibration chain (the three lists: a
:class:`QualityGrid`), :func:`relevance_quality_rows` scores the source's in-split
relevance (:mod:`jitr.experiment.split_relevance`) against the exact relevance
(:mod:`jitr.experiment.quality_table`); :func:`relevance_quality_report` also writes the
rows as JSON and returns the markdown table. Every teacher encodes each split once
(:func:`jitr.experiment.teachers.shapes_split_embeddings`), however many sources reuse it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jitr import paths
from jitr.experiment.quality_table import format_table, quality_rows
from jitr.experiment.split_relevance import estimated_relevance, parse_in_split
from jitr.experiment.stored_relevance import caption_set
from jitr.experiment.teachers import shapes_split_embeddings, teacher_workdirs
from jitr.fileio import write_json_atomic
from jitr.losses.calibration import parse_calibration
from jitr.progress import Progress
from jitr.relevance.registry import default_estimator_settings

CAPTIONS_PER_IMAGE = 5  # jitr_shapes


@dataclasses.dataclass(frozen=True)
class QualityGrid:
  """What a relevance quality table compares: every split, graded source and calibration
  chain, in that order (each stored as a tuple)."""

  splits: Sequence[str]
  """Splits of ``jitr_shapes``, e.g. ``("val", "test")``."""
  estimators: Sequence[str]
  """Graded sources, e.g. ``("oracle", "vectors:sentence", "topk:cider")``."""
  calibrations: Sequence[str]
  """Calibration chains, e.g. ``("none", "minmax,power:2")``."""

  def __post_init__(self) -> None:
    for name in ("splits", "estimators", "calibrations"):
      object.__setattr__(self, name, tuple(getattr(self, name)))


def relevance_quality_rows(
  data_dir: str,
  grid: QualityGrid,
  *,
  shapes_config: str = "default",
  settings: Mapping[str, Any] | None = None,
  log: Callable[[str], None] = print,
  progress: bool = False,
) -> list[dict]:
  """``{"split", "estimator", "calibration", <metric>: fraction}`` for every split, graded
  source (``estimators``) and calibration chain of ``grid``, in that order. Bad sources and
  chains are refused before anything is built or computed.

  Args:
    data_dir: the TFDS data dir holding (or to hold) ``jitr_shapes/<shapes_config>``.
    grid: the splits, graded sources and calibration chains (:class:`QualityGrid`).
    settings: the estimators' settings (default
      :func:`~jitr.relevance.registry.default_estimator_settings`).
    progress: one :class:`~jitr.progress.Progress` line on stderr: (split, source) pairs
      scored of ``len(splits) * len(estimators)``, seconds each, ETA (and the images
      generated, when jitr_shapes is built first).
  """
  splits, estimators, calibrations = grid.splits, grid.estimators, grid.calibrations
  for spec in calibrations:
    parse_calibration(spec)
  for spec in estimators:
    parse_in_split(spec)
  settings = default_estimator_settings() if settings is None else settings
  from jitr.data.shapes import tfds as shapes_tfds

  shapes_tfds.build(data_dir, shapes_config, progress=progress)
  teachers = teacher_workdirs(dict(enumerate(estimators)))
  rows = []
  total = len(splits) * len(estimators)
  with Progress(total, "sources", label="relevance quality", enabled=progress) as shown:
    log_step = shown.wrap_log(log)
    for split in splits:
      data = shapes_tfds.load_split(
        split, data_dir=data_dir, config=shapes_config, images=bool(teachers)
      )
      embeddings = {w: shapes_split_embeddings(w, data, shapes_config) for w in teachers}
      exact = shapes_tfds.split_relevance(split, data_dir=data_dir, config=shapes_config)
      source = f"jitr_shapes/{shapes_config}/{split}"
      captions = caption_set(data["captions"], CAPTIONS_PER_IMAGE, source)
      for name in estimators:
        log_step(f"{split}: {name}")
        estimated, positives = estimated_relevance(
          name, captions, exact, settings=settings, teacher=embeddings.get
        )
        for row in quality_rows(estimated, exact, positives, calibrations, log=log_step):
          rows.append({"split": split, "estimator": name, **row})
        shown.advance()
  return rows


def _plain(settings: Mapping[str, Any]) -> dict:
  """``settings`` as plain JSON-able dicts."""
  return {name: dict(values) for name, values in settings.items()}


def relevance_quality_report(
  data_dir: str,
  grid: QualityGrid,
  *,
  shapes_config: str = "default",
  settings: Mapping[str, Any] | None = None,
  output: str | None = None,
  log: Callable[[str], None] = print,
  progress: bool = False,
) -> str:
  """The markdown table of :func:`!relevance_quality_rows` (same arguments); with ``output``,
  also ``{"settings": {shapes_config, estimators, teachers}, "rows": [...]}`` as JSON there
  (``teachers``: each workdir as written -> its absolute path)."""
  settings = default_estimator_settings() if settings is None else settings
  rows = relevance_quality_rows(
    data_dir,
    grid,
    shapes_config=shapes_config,
    settings=settings,
    log=log,
    progress=progress,
  )
  if output:
    meta = {
      "shapes_config": shapes_config,
      "estimators": _plain(settings),
      "teachers": {
        w: paths.absolute(w) for w in teacher_workdirs(dict(enumerate(grid.estimators)))
      },
    }
    write_json_atomic(output, {"settings": meta, "rows": rows})
  return format_table(rows)
