"""The config fields that say which data a run reads, checked before anything is built:
the dataset's precomp folder, test split and captions per image, the ``labelled`` group,
and the graded sources the dataset can give."""

from __future__ import annotations

from typing import Any

from jitr.data.datasets import DATASETS, DatasetInfo, dataset_info
from jitr.data.labelled import POSITIVES
from jitr.experiment.data_sources import source_of
from jitr.training.graded import SOURCES, parse_source

# The fields of config.labelled (configs/default.py sets each).
LABELLED_FIELDS: tuple[str, ...] = (
  "folder",
  "images",
  "texts",
  "labels",
  "image_variable",
  "text_variable",
  "label_variable",
  "train_name",
  "val_name",
  "test_name",
  "first_class",
  "val_pairs",
  "positives",
)


def check_dataset(config: Any) -> DatasetInfo:
  """The :class:`DatasetInfo` of ``config.dataset``; ``ValueError`` for an unknown one, or
  for what its :class:`~jitr.experiment.data_sources.DataSource` refuses
  (:meth:`~jitr.experiment.data_sources.DataSource.check_config`: a ``*_precomp`` dataset
  without ``precomp_root``, a ``test_split`` it does not have, a ``captions_per_image`` it
  cannot have)."""
  dataset = dataset_info(config.dataset)
  source_of(dataset).check_config(config, dataset)
  return dataset


# config.labelled's whole-number fields and their smallest value; the others are strings.
LABELLED_COUNTS: dict[str, int] = {"first_class": 0, "val_pairs": 0}


def check_labelled(config: Any, dataset: DatasetInfo) -> None:
  """``config.labelled`` (configs/default.py): strings, whole numbers, ``positives`` one of
  :data:`!jitr.data.labelled.POSITIVES`; then what the dataset's source requires of the
  group (:meth:`~jitr.experiment.data_sources.DataSource.check_labelled`: for a labelled
  vector dataset a ``folder`` and a validation split)."""
  group = config.labelled
  for name in LABELLED_FIELDS:
    value = group[name]
    if name in LABELLED_COUNTS:
      minimum = LABELLED_COUNTS[name]
      if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(
          f"config.labelled.{name}: expected a whole number >= {minimum}, got {value!r}"
        )
    elif not isinstance(value, str):
      raise ValueError(f"config.labelled.{name}: expected a string, got {value!r}")
  if group.positives not in POSITIVES:
    raise ValueError(
      f"config.labelled.positives: expected one of {', '.join(map(repr, POSITIVES))} (pairs "
      f"sharing a class are positives, or only a pair is), got {group.positives!r}"
    )
  source_of(dataset).check_labelled(config)


def check_graded_source(config: Any, name: str, leaves, dataset: DatasetInfo) -> None:
  """What a graded source needs of the dataset (``SourceKind.needs``): exact relevance
  (``oracle``), class labels (``labels``, which grades nothing beyond the positives when
  pairs sharing a class are positives), captions' words (every stored source)."""
  for leaf in leaves:
    needs = SOURCES[leaf.kind].needs
    if needs is not None and not getattr(dataset, needs):
      have = ", ".join(d.name for d in DATASETS.values() if getattr(d, needs))
      raise ValueError(
        f"config.graded.{name}: {leaf.kind!r} relevance needs a dataset with "
        f"{needs.replace('_', ' ')} ({have}), not {config.dataset}"
      )
    if needs == "class_labels" and config.labelled.positives == "class":
      raise ValueError(
        f"config.graded.{name}: {leaf.kind!r} grades the pairs sharing some classes, which "
        "config.labelled.positives = 'class' makes positives (relevance 1); set it to 'pair'"
      )
    if leaf.stored is not None and dataset.text_input != "tokens":
      raise ValueError(
        f"config.graded.{name}: {leaf.spec()!r} reads relevance of captions' words; "
        f"{config.dataset} has text vectors: use 'labels' (with config.labelled.positives = "
        "'pair') or no graded input"
      )


def check_graded(config: Any, dataset: DatasetInfo) -> None:
  """Every ``config.graded`` source parses and the dataset can give it
  (:func:`check_graded_source`)."""
  for name, source in dict(config.graded).items():
    try:
      leaves = parse_source(source).leaves()
    except ValueError as err:
      raise ValueError(f"config.graded.{name}: {err}") from None
    check_graded_source(config, name, leaves, dataset)
