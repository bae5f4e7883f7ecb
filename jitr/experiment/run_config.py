"""A run's config (``configs/*.py``): its checks, its resolution and the fields a resume
may change. Every field's default lives in ``configs/default.py``; the code reads
``config.x`` without a second default, so a config missing a field is refused here in one
line naming it.

* :func:`check_train_config` -- every field the run reads is present
  (:data:`REQUIRED_FIELDS`, :data:`REQUIRED_GROUP_FIELDS`) and valid, before anything is
  built.
* :func:`resolved_config` -- the config as ``config.json`` records it: references
  resolved, every path made absolute.
* :data:`EXECUTION_FIELDS` -- the fields that say how a run executes rather than what it
  computes; :func:`run_differences` -- the other fields in which two configs differ (a
  resume must match its workdir's ``config.json`` in all of them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ml_collections

from jitr import paths
from jitr.config_fields import check_bool, check_divides_batch, check_number
from jitr.experiment.dataset_config import (
  LABELLED_FIELDS,
  check_dataset,
  check_graded,
  check_labelled,
)
from jitr.experiment.network_config import (
  check_concepts,
  check_text,
  check_text_input,
  check_token_chunks,
)
from jitr.experiment.run_caption_form import resolved_caption_form
from jitr.experiment.run_concepts import resolved_labels
from jitr.experiment.run_tokenizer import resolved_tokenizer
from jitr.losses import objective
from jitr.losses.composite import check_terms
from jitr.models.model_settings import check_model_settings
from jitr.models.registry import network_of
from jitr.training.graded import CombinedSource, GradedSource, parse_source
from jitr.training.optimizer_config import check_optimizer_config

# Whole-number fields and their smallest valid value (checked when present in the config).
COUNTS: dict[str, int] = {
  "batch_size": 1,
  "num_epochs": 0,  # 0: the initial (pretrained) model, validated and saved as step 0
  "eval_batch_size": 1,
  "log_every_steps": 1,
  "max_caption_len": 1,
  "vocab_min_count": 1,
  "top_k": 1,
  "eval_folds": 0,
  "prefetch": 0,
  "seed": 0,
  "token_chunks": 1,
  "grad_chunks": 1,
  "query_chunks": 1,
  "eval_every_steps": 0,
}
# Whole-number fields with a largest valid value, and why. JAX seeds its random keys with
# 32 bits (x64 off, as jitr runs): a larger seed would start from the key of its low 32
# bits, and one of 2**63 or more does not convert at all.
MAXIMA: dict[str, tuple[int, str]] = {
  "seed": (2**32 - 1, "JAX seeds its random keys with 32 bits"),
}


def check_counts(config: Any) -> None:
  """Raises ``ValueError`` naming the first field of :data:`COUNTS` that is not a whole
  number (``bool`` is not one) at least its minimum, or that is above its
  :data:`MAXIMA` entry (``config.seed: expected a whole number in [0, 4294967295] ...``)."""
  for name, minimum in COUNTS.items():
    if name not in config:
      continue
    value = config[name]
    if isinstance(value, bool) or not isinstance(value, int):
      raise ValueError(
        f"config.{name}: expected a whole number >= {minimum}, got {value!r} "
        f"({type(value).__name__})"
      )
    if name in MAXIMA and not minimum <= value <= MAXIMA[name][0]:
      maximum, why = MAXIMA[name]
      raise ValueError(
        f"config.{name}: expected a whole number in [{minimum}, {maximum}] ({why}), got {value}"
      )
    if value < minimum:
      raise ValueError(f"config.{name}: expected a whole number >= {minimum}, got {value}")


# Fields every training config has (configs/default.py sets each) and what they hold.
REQUIRED_FIELDS: dict[str, str] = {
  "dataset": "a string",
  "captions_per_image": "a whole number",
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
  "vocab_min_coverage": "a number",
  "train_fraction": "a number",
  "log_every_steps": "a whole number",
  "eval_every_steps": "a whole number",
  "prefetch": "a whole number",
  "eval_folds": "a whole number",
  "top_k": "a whole number",
  "shapes_config": "a string",
  "init_from": "a string",
  "vocab_file": "a string",
  "compilation_cache": "True or False",
  "token_buckets": "a list",
  "token_chunks": "a whole number",
  "grad_chunks": "a whole number",
  "query_chunks": "a whole number",
  "model": "an object",
  "loss": "an object",
  "optimizer": "an object",
  "graded": "an object",
  "calibration": "an object",
  "estimators": "an object",
  "concepts": "an object",
  "distributed": "an object",
  "text": "an object",
  "image": "an object",
  "labelled": "an object",
  "karpathy": "an object",
}
# Fields of the groups above that the run reads (configs/default.py sets each). The
# optimizer "adamw" also reads optimizer.weight_decay (:data:`ADAMW_FIELDS`; a config
# that replaces the whole optimizer group with an "adam" one may leave it out).
REQUIRED_GROUP_FIELDS: dict[str, tuple[str, ...]] = {
  "optimizer": (
    "name",
    "learning_rate",
    "grad_clip",
    "decay_epochs",
    "decay_factor",
    "module_decay_factors",
    "module_lr_factors",
    "schedule",
    "warmup_steps",
    "b2",
    "eps",
    "decay_matrices_only",
    "frozen_modules",
    "layer_decay",
  ),
  "concepts": ("source", "num_concepts", "vectors", "labels", "wordnet"),
  "text": ("pretrained", "word_augment", "tokenizer", "caption_form"),
  "image": ("region_drop",),
  "labelled": LABELLED_FIELDS,
  "karpathy": ("json", "images", "train_splits"),
  "distributed": (
    "coordinator_address",
    "num_processes",
    "process_id",
    "stop_check_every_steps",
    "heartbeat_timeout_s",
  ),
}
ADAMW_FIELDS: tuple[str, ...] = ("weight_decay",)
# Whole-number fields of config.distributed that are never unset, and their smallest value.
DISTRIBUTED_COUNTS: dict[str, int] = {"stop_check_every_steps": 1, "heartbeat_timeout_s": 1}


def check_distributed(config: Any) -> None:
  """Raises ``ValueError`` naming the first field of :data:`DISTRIBUTED_COUNTS` in
  ``config.distributed`` that is not a whole number at least its minimum (checked here,
  before the job is joined or anything is written; the other fields are checked when the
  job is joined)."""
  for name, minimum in DISTRIBUTED_COUNTS.items():
    value = config.distributed[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
      raise ValueError(
        f"config.distributed.{name}: expected a whole number >= {minimum}, got {value!r}"
      )


def check_required_fields(config: Any) -> None:
  """Raises ``ValueError`` naming the first field of :data:`REQUIRED_FIELDS` that
  ``config`` lacks, or that holds a string where an object is expected or the reverse
  (numbers are checked by :func:`check_counts`), then the first field of
  :data:`REQUIRED_GROUP_FIELDS` (and, for ``adamw``, :data:`ADAMW_FIELDS`) its group lacks:
  ``config.optimizer.grad_clip: missing (see configs/default.py)``."""
  for name, kind in REQUIRED_FIELDS.items():
    if name not in config:
      raise ValueError(f"config.{name}: missing; expected {kind} (see configs/default.py)")
    value = config[name]
    is_object = hasattr(value, "keys")
    if (kind == "an object" and not is_object) or (
      kind == "a string" and not isinstance(value, str)
    ):
      raise ValueError(f"config.{name}: expected {kind}, got {value!r} ({type(value).__name__})")
  for group, fields in REQUIRED_GROUP_FIELDS.items():
    required = fields + (ADAMW_FIELDS if group == "optimizer" and _adamw(config) else ())
    for name in required:
      if name not in config[group]:
        raise ValueError(f"config.{group}.{name}: missing (see configs/default.py)")


def _adamw(config: Any) -> bool:
  return "name" in config.optimizer and config.optimizer.name == "adamw"


# Fields that name a file or a workdir, or are empty ("").
OPTIONAL_STRINGS: tuple[str, ...] = ("init_from", "vocab_file")
# Switches: fields of the config and of every loss term that take True or False.
BOOLEANS: tuple[str, ...] = ("compilation_cache",)


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


def check_learnable(config: Any) -> None:
  """Refuses, in one line, a ``batch_size`` of 1, which runs but cannot learn (a batch of
  one pair holds no negative, so every ranking loss is 0). ``config`` has passed
  :func:`check_counts`."""
  if config.batch_size < 2:
    raise ValueError(
      f"config.batch_size: expected at least 2 pairs, got {config.batch_size} (a batch of "
      "one pair holds no negative: every ranking loss would be 0)"
    )


def _check_vocab_coverage(config: Any) -> None:
  """``config.vocab_min_coverage``: a share of the words in [0, 1]."""
  check_number("vocab_min_coverage", config.vocab_min_coverage, 0.0, True)
  if config.vocab_min_coverage > 1:
    raise ValueError(
      f"config.vocab_min_coverage: expected a share of the words in [0, 1], got "
      f"{config.vocab_min_coverage!r}"
    )


def _check_train_fraction(config: Any) -> None:
  """``config.train_fraction``: a share of the training images in (0, 1]
  (:func:`!jitr.data.pairs.training_subset`)."""
  fraction = config.train_fraction
  check_number("train_fraction", fraction, 0.0, False)
  if fraction > 1:
    raise ValueError(
      f"config.train_fraction: expected a share of the training images in (0, 1], got {fraction!r}"
    )


def _check_switches_and_paths(config: Any) -> None:
  """:data:`BOOLEANS` are True or False; :data:`OPTIONAL_STRINGS` are strings."""
  for name in BOOLEANS:
    if name in config:
      check_bool(name, config[name])
  for name in OPTIONAL_STRINGS:
    if name in config and not isinstance(config[name], str):
      value = config[name]
      raise ValueError(f"config.{name}: expected a string, got {value!r} ({type(value).__name__})")


def check_train_config(config: Any) -> None:
  """Raises ``ValueError`` naming the first bad field, in this order: a missing field or
  one of the wrong kind (:func:`check_required_fields`), a count out of range
  (:func:`check_counts`), a ``distributed`` count (:func:`check_distributed`), a ``model``
  the network it names does not take
  (:func:`jitr.models.model_settings.check_model_settings`), the dataset's fields
  (:func:`!jitr.experiment.dataset_config.check_dataset`), a bad ``token_buckets``, an
  optimizer field
  (:func:`!jitr.training.optimizer_config.check_optimizer_config`), a setting that cannot learn
  (:func:`check_learnable`), ``vocab_min_coverage``, ``train_fraction``, the network's fields
  (:mod:`!jitr.experiment.network_config`: concepts, text, captions it reads, caption
  chunks), the ``labelled`` group, a switch that is not a bool (:data:`BOOLEANS`), an
  :data:`OPTIONAL_STRINGS` field that is not a string, the loss terms
  (:func:`jitr.losses.composite.check_terms`: each term against its loss; one that
  starts at or after the last epoch would never train), a ``graded`` source that does
  not parse or that the dataset cannot give, a bad ``calibration`` chain."""
  check_required_fields(config)
  check_counts(config)
  check_distributed(config)
  check_model_settings(config.model)
  dataset = check_dataset(config)
  check_token_buckets(config)
  check_optimizer_config(config.optimizer)
  check_learnable(config)
  _check_vocab_coverage(config)
  _check_train_fraction(config)
  check_concepts(config)
  check_text(config)
  check_labelled(config, dataset)
  check_text_input(config, dataset)
  check_token_chunks(config)
  check_divides_batch(config, "grad_chunks")
  _check_query_chunks(config)
  _check_switches_and_paths(config)
  check_terms(config.loss, num_epochs=config.num_epochs)
  check_graded(config, dataset)
  # a bad calibration chain or table fails here, before any data is built
  objective(config.loss, steps_per_epoch=1, calibration=config.calibration)


# Fields (dotted) that name a file or folder the run reads or writes: a local path or a
# storage URL ("" where unused).
PATH_FIELDS: tuple[str, ...] = (
  "precomp_root",
  "data_dir",
  "init_from",
  "vocab_file",
  "concepts.source",
  "text.pretrained",
)


def storage_urls(config: Any, workdir: str, data_dir: str) -> list[str]:
  """The storage URLs a run of ``config`` in ``workdir`` with its data in ``data_dir``
  reads or writes, first seen first: the workdir, the data folder, every
  :data:`PATH_FIELDS` field and every teacher workdir of ``config.graded`` that is a URL."""
  fields = [
    config[group][name] if group else config[name]
    for group, _, name in (field.rpartition(".") for field in PATH_FIELDS)
  ]
  teachers = [
    leaf.estimator
    for source in dict(config.graded).values()
    for leaf in parse_source(source).leaves()
    if leaf.stored == "teacher"
  ]
  found = [workdir, data_dir, *fields, *teachers]
  return list(dict.fromkeys(p for p in found if isinstance(p, str) and paths.is_url(p)))


def check_storage(config: Any, workdir: str, data_dir: str) -> None:
  """Refuses, before anything is read or written, a storage URL of the run
  (:func:`storage_urls`) that cannot be reached: one :class:`jitr.paths.StorageError`
  line naming it, what failed and what to do (:func:`jitr.paths.check_reachable`)."""
  for url in storage_urls(config, workdir, data_dir):
    paths.check_reachable(url)


def with_absolute_teachers(graded: Mapping[str, str]) -> dict[str, str]:
  """``config.graded`` with every teacher workdir made absolute (against the current
  directory), so the ``config.json`` of a run names its teacher wherever it is read."""

  def absolute(leaf: GradedSource) -> GradedSource:
    if leaf.stored != "teacher":
      return leaf
    return leaf._replace(estimator=paths.absolute(leaf.estimator))

  out = {}
  for name, source in graded.items():
    parsed = parse_source(source)
    if isinstance(parsed, CombinedSource):
      parsed = parsed._replace(parts=tuple(absolute(p) for p in parsed.parts))
    else:
      parsed = absolute(parsed)
    out[name] = parsed.spec()
  return out


def resolved_config(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """A copy of ``config`` with its references resolved, every teacher workdir,
  ``init_from``, ``vocab_file``, ``precomp_root``, ``data_dir``, ``concepts.source``,
  ``concepts.wordnet``, ``text.pretrained`` and ``labelled.folder`` made absolute, so
  ``config.json`` names them from any directory (``jitr-eval`` run elsewhere finds them),
  and ``text.tokenizer`` (:func:`jitr.experiment.run_tokenizer.resolved_tokenizer`: ``""``
  becomes ``config.vocab_file``'s tokenizer or ``"jitr"``), ``text.caption_form``
  (:func:`jitr.experiment.run_caption_form.resolved_caption_form`) and ``concepts.labels``
  (:func:`jitr.experiment.run_concepts.resolved_labels`) resolved. ``config`` has passed
  :func:`check_train_config`."""
  config = config.copy_and_resolve_references()
  config.graded = ml_collections.ConfigDict(with_absolute_teachers(dict(config.graded)))
  for field in ("init_from", "vocab_file", "precomp_root", "data_dir"):
    if config[field]:
      config[field] = paths.absolute(config[field])
  for field in ("source", "wordnet"):
    if config.concepts[field]:
      config.concepts[field] = paths.absolute(config.concepts[field])
  if config.text.pretrained:
    config.text.pretrained = paths.absolute(config.text.pretrained)
  config.text.tokenizer = resolved_tokenizer(config.text, config.vocab_file)
  if config.labelled.folder:
    config.labelled.folder = paths.absolute(config.labelled.folder)
  for field in ("json", "images"):
    if config.karpathy[field]:
      config.karpathy[field] = paths.absolute(config.karpathy[field])
  config.text.caption_form = resolved_caption_form(config.text)
  config.concepts.labels = resolved_labels(config)
  return config


def _check_query_chunks(config) -> None:
  """``config.query_chunks`` divides ``batch_size`` and the network scores embeddings
  (:mod:`!jitr.training.query_chunks`; each device's share is checked when the step runs)."""
  check_divides_batch(config, "query_chunks")
  if config.query_chunks > 1:
    name, network = network_of(config.model)
    if network.pairwise:
      raise ValueError(
        f"config.query_chunks: the {name!r} network scores each (image, caption) pair "
        "itself; expected 1, or a network that scores embeddings"
      )


# Fields (dotted paths; a group covers every field under it) that a resume may change:
# they set how the run is executed, logged and cached, or (init_from) what only a run's
# first start reads, not what a resume trains, evaluates or writes to metrics.json. Every
# other field must equal config.json's.
EXECUTION_FIELDS: dict[str, str] = {
  "log_every_steps": "how often train scalars and progress are logged and losses checked",
  "eval_batch_size": "how many items an evaluation pass embeds at once (the same scores)",
  "prefetch": "how many batches are put on the devices ahead of the step",
  "token_buckets": "the widths training batches are padded to (the same scores, other compiles)",
  "token_chunks": (
    "how many length-sorted chunks a training batch's captions are encoded in (the same "
    "pairs and objective, other compiles)"
  ),
  "query_chunks": (
    "how many chunks each device's query rows are scored and lossed in (the same loss and "
    "update, other compiles)"
  ),
  "compilation_cache": "whether compiled steps are kept on disk",
  "data_dir": (
    "where the TFDS data, relevance records and compile cache are kept (built again "
    "from the config when missing)"
  ),
  "precomp_root": (
    "where the precomp folders are read from (config.json keeps the first run's absolute "
    "path; the same files seen from another directory or host)"
  ),
  "labelled.folder": (
    "where the labelled vectors are read from (config.json keeps the first run's absolute "
    "path; the same files seen from another directory or host)"
  ),
  "karpathy.images": (
    "where the image files are read from (config.json keeps the first run's absolute "
    "path; the same files seen from another directory or host)"
  ),
  "backend": "the data-parallel implementation (shard_map or pmap) of the same global step",
  "distributed": "how the processes of a multi-host run reach each other",
  "estimators.sentence.show_progress": "whether the sentence model draws its own progress bars",
  "estimators.sentence.device": "where the sentence model computes the same caption vectors",
  "estimators.sentence.batch_size": "how many captions the sentence model encodes at once",
  "estimators.tokens.show_progress": "whether the tokens model draws its own progress bars",
  "init_from": (
    "where a new run's first parameters come from (a resume continues from its own latest "
    "checkpoint; config.json keeps the first run's value)"
  ),
}
# Fields a config.json written by an earlier jitr may lack, and the value its run had:
# one chunk of captions, every training image, validation after every epoch only. Reading
# such a workdir (jitr.experiment.workdir.read_trained_config) or comparing a new config
# with it (run_differences) gives it that value.
EARLIER_DEFAULTS: dict[str, Any] = {
  "token_chunks": 1,
  "grad_chunks": 1,
  "query_chunks": 1,
  "train_fraction": 1.0,
  "eval_every_steps": 0,
}
# May change within the bounds of jitr.experiment.workdir.check_num_epochs; config.json
# then records the new value.
EPOCHS_FIELD = "num_epochs"


class _Absent:
  """A field present in one of two configs only."""

  def __repr__(self) -> str:
    return "(absent)"


ABSENT = _Absent()


def _may_change(path: str) -> bool:
  """Whether the dotted ``path`` is ``num_epochs`` or under an :data:`EXECUTION_FIELDS` entry."""
  return path == EPOCHS_FIELD or any(
    path == field or path.startswith(field + ".") for field in EXECUTION_FIELDS
  )


def _empty_group(value: Any) -> bool:
  return isinstance(value, Mapping) and not value


def _leaf_differences(old: Any, new: Any, path: str) -> list[tuple[str, Any, Any]]:
  """``(path, old, new)`` for every differing leaf under ``path`` (dicts compared key by
  key; a key on one side only is one entry, but an empty group on one side and nothing on
  the other are the same: ``optimizer.module_decay_factors = {}`` of configs/default.py and
  a config.json written before that field was explicit; lists and tuples compared as
  lists)."""
  if isinstance(old, Mapping) and isinstance(new, Mapping):
    out = []
    for key in sorted(set(old) | set(new), key=str):
      sub = f"{path}.{key}" if path else str(key)
      a, b = old.get(key, ABSENT), new.get(key, ABSENT)
      if (a is ABSENT and _empty_group(b)) or (b is ABSENT and _empty_group(a)):
        continue
      out += _leaf_differences(a, b, sub)
    return out
  if isinstance(old, list | tuple) and isinstance(new, list | tuple):
    old, new = list(old), list(new)
  same = old == new and isinstance(old, bool) == isinstance(new, bool)  # True is not 1
  return [] if same else [(path, old, new)]


def run_differences(saved: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
  """``(dotted field, saved value, new value)`` for every field where the JSON configs
  ``saved`` and ``new`` differ, in field order, leaving out the fields a resume may change
  (:data:`EXECUTION_FIELDS`, ``num_epochs``). A field or group on one side only is one
  entry whose other value is :data:`ABSENT`, but a field of :data:`EARLIER_DEFAULTS` missing
  on a side is the value it stands for there."""
  saved, new = {**EARLIER_DEFAULTS, **saved}, {**EARLIER_DEFAULTS, **new}
  return [d for d in _leaf_differences(saved, new, "") if not _may_change(d[0])]
