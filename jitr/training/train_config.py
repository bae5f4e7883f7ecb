"""Checks of a training config (``configs/*.py``) before anything is built."""

from __future__ import annotations

from typing import Any

from jitr.data.datasets import DATASETS, dataset_info
from jitr.losses import objective
from jitr.training.graded import parse_source

# Whole-number fields and their smallest valid value (checked when present in the config).
COUNTS: dict[str, int] = {
  "batch_size": 1,
  "num_epochs": 1,
  "eval_batch_size": 1,
  "log_every_steps": 1,
  "max_caption_len": 1,
  "vocab_min_count": 1,
  "top_k": 1,
  "eval_folds": 0,
  "prefetch": 0,
  "seed": 0,
}


def check_counts(config: Any) -> None:
  """Raises ``ValueError`` naming the first field of :data:`COUNTS` that is not a whole
  number (``bool`` is not one) at least its minimum."""
  for name, minimum in COUNTS.items():
    if name not in config:
      continue
    value = config[name]
    if isinstance(value, bool) or not isinstance(value, int):
      raise ValueError(
        f"config.{name}: expected a whole number >= {minimum}, got {value!r} "
        f"({type(value).__name__})"
      )
    if value < minimum:
      raise ValueError(f"config.{name}: expected a whole number >= {minimum}, got {value}")


def check_train_config(config: Any) -> None:
  """Raises ``ValueError`` naming the first bad field: an unknown ``dataset``, a
  ``*_precomp`` dataset without ``precomp_root``, ``oracle`` relevance outside
  jitr_shapes, an unparsable ``graded`` source, a count out of range
  (:func:`check_counts`: ``batch_size``, ``num_epochs``, ``eval_batch_size``,
  ``log_every_steps`` ...), a bad ``calibration`` chain."""
  check_counts(config)
  dataset = dataset_info(config.dataset)
  if dataset.kind == "precomp" and not config.precomp_root:
    raise ValueError(
      f"config.precomp_root: the folder holding {config.dataset}/ is required for {config.dataset}"
    )
  for name, source in dict(config.graded).items():
    try:
      leaves = parse_source(source).leaves()
    except ValueError as err:
      raise ValueError(f"config.graded.{name}: {err}") from None
    if not dataset.exact_relevance and any(leaf.kind == "oracle" for leaf in leaves):
      raise ValueError(
        f"config.graded.{name}: 'oracle' relevance needs a dataset with exact relevance "
        f"({', '.join(d.name for d in DATASETS.values() if d.exact_relevance)}), "
        f"not {config.dataset}"
      )
  if config.get("calibration"):  # a bad chain or table fails here, before any data is built
    objective(config.loss, steps_per_epoch=1, calibration=config.calibration)
