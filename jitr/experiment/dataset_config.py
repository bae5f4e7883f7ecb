"""The config fields that say which data a run reads, checked before anything is built:
the dataset's precomp folder, test split and captions per image, the ``labelled`` group,
and the graded sources the dataset can give."""

from __future__ import annotations

from typing import Any

from jitr.data.datasets import DATASETS, DatasetInfo, captions_per_image, dataset_info
from jitr.data.labelled import POSITIVES
from jitr.training.graded import SOURCES

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
  """The :class:`DatasetInfo` of ``config.dataset``; ``ValueError`` for an unknown one, a
  ``*_precomp`` dataset without ``precomp_root``, a ``test_split`` it does not have or a
  ``captions_per_image`` it cannot have."""
  dataset = dataset_info(config.dataset)
  if dataset.kind == "precomp" and not config.precomp_root:
    raise ValueError(
      f"config.precomp_root: the folder holding {config.dataset}/ is required for {config.dataset}"
    )
  _check_test_split(config, dataset.kind)
  _check_captions_per_image(config, dataset)
  return dataset


def _check_captions_per_image(config: Any, dataset: DatasetInfo) -> None:
  """``config.captions_per_image``: a non-negative integer, required (positive) for a
  precomp folder jitr does not know; jitr_shapes' own 5 or 0."""
  count = captions_per_image(dataset, config.captions_per_image)
  if dataset.kind == "shapes" and count != dataset.captions_per_image:
    raise ValueError(
      f"config.captions_per_image: {dataset.name} has {dataset.captions_per_image} captions "
      f"per image; expected 0 or {dataset.captions_per_image}, got {count}"
    )


def _check_test_split(config: Any, kind: str) -> None:
  """``config.test_split`` must be a split of the dataset (jitr_shapes: ``test``)."""
  if "test_split" not in config:
    return
  splits = dataset_info(config.dataset).splits if kind == "precomp" else ("test",)
  if config.test_split not in splits:
    raise ValueError(
      f"config.test_split: expected one of {', '.join(map(repr, splits))} "
      f"(the splits of {config.dataset}), got {config.test_split!r}"
    )


# config.labelled's whole-number fields and their smallest value; the others are strings.
LABELLED_COUNTS: dict[str, int] = {"first_class": 0, "val_pairs": 0}


def check_labelled(config: Any, dataset: DatasetInfo) -> None:
  """``config.labelled`` (configs/default.py): strings, whole numbers, ``positives`` one of
  :data:`!jitr.data.labelled.POSITIVES`; for a labelled vector dataset a ``folder``, and a
  validation split (``val_name``, or ``val_pairs`` > 0 held out of the training pairs)."""
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
  if dataset.kind != "labelled":
    return
  if not group.folder:
    raise ValueError(
      f"config.labelled.folder: the folder of {config.dataset}'s image vectors, text vectors "
      "and labels is required"
    )
  if not group.val_pairs and not group.val_name:
    raise ValueError(
      "config.labelled.val_name: expected the name of the validation files, or "
      "config.labelled.val_pairs > 0 training pairs held out for validation"
    )


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
