"""Checks of a training config (``configs/*.py``) before anything is built."""

from __future__ import annotations

import math
import numbers
from typing import Any

from jitr.data.concept_data import VECTOR_CHOICES
from jitr.data.datasets import DATASETS, dataset_info
from jitr.data.precomp import DATASET_SPLITS
from jitr.losses import objective
from jitr.models.model_settings import check_model_settings
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


# Fields every training config has (configs/default.py sets each) and what they hold.
REQUIRED_FIELDS: dict[str, str] = {
  "dataset": "a string",
  "data_dir": "a string",
  "precomp_root": "a string",
  "test_split": "a string",
  "backend": "a string",
  "batch_size": "a whole number",
  "eval_batch_size": "a whole number",
  "num_epochs": "a whole number",
  "seed": "a whole number",
  "max_caption_len": "a whole number",
  "vocab_min_count": "a whole number",
  "log_every_steps": "a whole number",
  "model": "an object",
  "loss": "an object",
  "optimizer": "an object",
  "graded": "an object",
}


def check_required_fields(config: Any) -> None:
  """Raises ``ValueError`` naming the first field of :data:`REQUIRED_FIELDS` that
  ``config`` lacks, or that holds a string where an object is expected or the reverse
  (numbers are checked by :func:`check_counts`)."""
  for name, kind in REQUIRED_FIELDS.items():
    if name not in config:
      raise ValueError(f"config.{name}: missing; expected {kind} (see configs/default.py)")
    value = config[name]
    is_object = hasattr(value, "keys")
    if (kind == "an object" and not is_object) or (
      kind == "a string" and not isinstance(value, str)
    ):
      raise ValueError(f"config.{name}: expected {kind}, got {value!r} ({type(value).__name__})")


# Number fields and their range: (smallest value, whether the smallest value is valid).
OPTIMIZER_NUMBERS: dict[str, tuple[float, bool]] = {
  "learning_rate": (0.0, False),
  "grad_clip": (0.0, True),  # 0: no clipping
}
TERM_NUMBERS: dict[str, tuple[float, bool]] = {
  "weight": (0.0, True),
  "margin": (0.0, True),
  "max_margin": (0.0, True),
  "triplet_margin": (0.0, True),
  "temperature": (0.0, False),
  "sharpness": (0.0, False),
}
# Fields that configs/default.py sets to a string but older config.json files may lack.
OPTIONAL_STRINGS: tuple[str, ...] = ("init_from", "vocab_file")
# Switches: fields of the config and of every loss term that take True or False.
BOOLEANS: tuple[str, ...] = ("compilation_cache",)
TERM_BOOLEANS: tuple[str, ...] = ("keep_triplet",)


def check_number(field: str, value: Any, minimum: float, inclusive: bool) -> None:
  """Raises ``ValueError`` ``config.FIELD: expected a finite number > / >= MINIMUM, got V``
  unless ``value`` is such a number (a bool or a string is not one)."""
  expected = f"a finite number {'>=' if inclusive else '>'} {minimum:g}"
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise ValueError(f"config.{field}: expected {expected}, got {value!r} ({type(value).__name__})")
  v = float(value)
  if not (math.isfinite(v) and (v >= minimum if inclusive else v > minimum)):
    raise ValueError(f"config.{field}: expected {expected}, got {value!r}")


def check_bool(field: str, value: Any) -> None:
  """Raises ``ValueError`` ``config.FIELD: expected True or False, got V`` unless
  ``value`` is a bool."""
  if not isinstance(value, bool):
    raise ValueError(
      f"config.{field}: expected True or False, got {value!r} ({type(value).__name__})"
    )


def _check_test_split(config: Any, kind: str) -> None:
  """``config.test_split`` must be a split of the dataset (jitr_shapes: ``test``)."""
  if "test_split" not in config:
    return
  if kind == "precomp":
    splits = DATASET_SPLITS.get(config.dataset.removesuffix("_precomp"), ())
  else:
    splits = ("test",)
  if config.test_split not in splits:
    raise ValueError(
      f"config.test_split: expected one of {', '.join(map(repr, splits))} "
      f"(the splits of {config.dataset}), got {config.test_split!r}"
    )


def check_token_buckets(config: Any) -> None:
  """``config.token_buckets`` (when present): a list of whole numbers >= 1, or empty."""
  if "token_buckets" not in config:
    return
  value = config.token_buckets
  if not isinstance(value, (list, tuple)) or any(
    isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in value
  ):
    raise ValueError(
      "config.token_buckets: expected a list of whole numbers >= 1 (caption widths), or () "
      f"for the split's longest caption, got {value!r}"
    )


def _check_optimizer(config: Any) -> None:
  optimizer = config.get("optimizer")
  if not hasattr(optimizer, "keys"):
    return
  for name, (minimum, inclusive) in OPTIMIZER_NUMBERS.items():
    if name in optimizer:
      check_number(f"optimizer.{name}", optimizer[name], minimum, inclusive)
  modules = optimizer.get("module_decay_factors")
  if modules is not None and not hasattr(modules, "keys"):
    raise ValueError(
      f"config.optimizer.module_decay_factors: expected an object {{module: factor}}, "
      f"got {modules!r}"
    )
  for module, factor in dict(modules or {}).items():
    check_number(f"optimizer.module_decay_factors.{module}", factor, 0.0, False)


def _check_concepts(config: Any) -> None:
  """``config.concepts`` (when present): ``source`` a string, ``num_concepts`` a whole
  number >= 2, ``vectors`` one of :data:`!jitr.data.concept_data.VECTOR_CHOICES`."""
  concepts = config.get("concepts")
  if concepts is None:
    return
  if not hasattr(concepts, "keys"):
    raise ValueError(f"config.concepts: expected an object, got {concepts!r}")
  source = concepts.get("source", "")
  if not isinstance(source, str):
    raise ValueError(f"config.concepts.source: expected a string (a folder or ''), got {source!r}")
  count = concepts.get("num_concepts", 300)
  if isinstance(count, bool) or not isinstance(count, int) or count < 2:
    raise ValueError(f"config.concepts.num_concepts: expected a whole number >= 2, got {count!r}")
  vectors = concepts.get("vectors", "onehot")
  if vectors not in VECTOR_CHOICES:
    raise ValueError(
      f"config.concepts.vectors: expected one of {', '.join(VECTOR_CHOICES)}, got {vectors!r}"
    )


def _check_loss_terms(config: Any) -> None:
  """Every loss term's numbers and switches; a term that starts at or after the last
  epoch (``from_epoch >= num_epochs``) would never train."""
  loss = config.get("loss")
  if not hasattr(loss, "keys"):
    return
  num_epochs = config.get("num_epochs")
  for term_name in loss.keys():
    term = loss[term_name]
    if not hasattr(term, "keys"):
      continue
    for name, (minimum, inclusive) in TERM_NUMBERS.items():
      if name in term and term[name] is not None:
        check_number(f"loss.{term_name}.{name}", term[name], minimum, inclusive)
    for name in TERM_BOOLEANS:
      if name in term:
        check_bool(f"loss.{term_name}.{name}", term[name])
    start = term.get("from_epoch")
    if (
      isinstance(num_epochs, int)
      and isinstance(start, numbers.Real)
      and not isinstance(start, bool)
      and start >= num_epochs
    ):
      raise ValueError(
        f"config.loss.{term_name}.from_epoch: expected less than config.num_epochs "
        f"({num_epochs}), got {start}: the term would never train; raise num_epochs or "
        "lower from_epoch"
      )


def check_train_config(config: Any) -> None:
  """Raises ``ValueError`` naming the first bad field: an unknown ``dataset``, a
  ``*_precomp`` dataset without ``precomp_root``, ``oracle`` relevance outside
  jitr_shapes, an unparsable ``graded`` source, a count out of range
  (:func:`check_counts`: ``batch_size``, ``num_epochs``, ``eval_batch_size``,
  ``log_every_steps`` ...), a ``test_split`` the dataset does not have, a bad
  ``token_buckets`` (:func:`check_token_buckets`), an
  ``optimizer.learning_rate`` / ``grad_clip`` out of range (:data:`OPTIMIZER_NUMBERS`),
  a loss term's weight, margin, temperature ... out of range (:data:`TERM_NUMBERS`), a
  switch that is not a bool (:data:`BOOLEANS`, :data:`TERM_BOOLEANS`), an
  :data:`OPTIONAL_STRINGS` field that is not a string, a loss term that
  starts at or after ``num_epochs``, a bad ``calibration`` chain; first, a missing field
  or one of the wrong kind (:func:`check_required_fields`) and a ``model`` the network
  it names does not take (:func:`jitr.models.model_settings.check_model_settings`)."""
  check_required_fields(config)
  check_counts(config)
  check_model_settings(config.model)
  dataset = dataset_info(config.dataset)
  if dataset.kind == "precomp" and not config.precomp_root:
    raise ValueError(
      f"config.precomp_root: the folder holding {config.dataset}/ is required for {config.dataset}"
    )
  _check_test_split(config, dataset.kind)
  check_token_buckets(config)
  _check_optimizer(config)
  _check_concepts(config)
  for name in BOOLEANS:
    if name in config:
      check_bool(name, config[name])
  for name in OPTIONAL_STRINGS:
    if name in config and not isinstance(config[name], str):
      value = config[name]
      raise ValueError(f"config.{name}: expected a string, got {value!r} ({type(value).__name__})")
  _check_loss_terms(config)
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
