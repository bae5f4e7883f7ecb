"""Checks of a training config (``configs/*.py``) before anything is built."""

from __future__ import annotations

from typing import Any

from jitr.training.graded import parse_source

DATASETS = ("jitr_shapes", "f30k_precomp", "coco_precomp")


def check_train_config(config: Any) -> None:
  """Raises ``ValueError`` naming the first bad field: an unknown ``dataset``, a
  ``*_precomp`` dataset without ``precomp_root``, ``oracle`` relevance outside
  jitr_shapes, an unparsable ``graded`` source, a non-positive ``batch_size``,
  ``num_epochs`` or a negative ``prefetch``, a bad ``calibration`` chain."""
  if config.dataset not in DATASETS:
    raise ValueError(
      f"config.dataset: expected one of {', '.join(map(repr, DATASETS))}, got {config.dataset!r}"
    )
  if config.dataset != "jitr_shapes" and not config.precomp_root:
    raise ValueError(
      f"config.precomp_root: the folder holding {config.dataset}/ is required for {config.dataset}"
    )
  if "oracle" in dict(config.graded).values() and config.dataset != "jitr_shapes":
    raise ValueError("config.graded: 'oracle' relevance exists only for jitr_shapes")
  for name, source in dict(config.graded).items():
    try:
      parse_source(source)
    except ValueError as err:
      raise ValueError(f"config.graded.{name}: {err}") from None
  if config.get("calibration"):  # a bad chain or table fails here, before any data is built
    from jitr.losses import objective

    objective(config.loss, steps_per_epoch=1, calibration=config.calibration)
  if config.batch_size <= 0 or config.num_epochs <= 0:
    raise ValueError("config.batch_size and config.num_epochs must be positive")
  if config.get("prefetch", 2) < 0:
    raise ValueError(f"config.prefetch: expected >= 0 batches put ahead, got {config.prefetch}")
