"""A folder of labelled vectors as a :class:`DataSource`: image vectors, text vectors and
class labels (``config.labelled``, :mod:`jitr.data.labelled_splits`), the files a run
pins; no words, no stored relevance, no teacher, no caption files."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from jitr.data import vocab as vocab_lib
from jitr.data.datasets import dataset_info
from jitr.data.labelled import LabelledSettings, split_paths
from jitr.data.labelled_splits import labelled_splits
from jitr.experiment.data_sources.loading import LoadedData
from jitr.experiment.data_sources.source import DataSource


class LabelledSource(DataSource):
  """``config.labelled.folder``: train and test files, and val files or validation pairs
  held out of the training ones."""

  kind = "labelled"

  def load(self, config, data_dir, *, teachers, vocab, say) -> LoadedData:
    """The folder's splits, with a vocabulary of the special tokens (``vocab`` when given);
    ``data_dir`` and ``teachers`` are not read."""
    del data_dir, teachers
    say(f"loading {config.labelled.folder}")
    layout = dataset_info(config.dataset).labelled
    splits = labelled_splits(LabelledSettings.of(config.labelled), layout)
    vocab = vocab if vocab is not None else vocab_lib.Vocab(vocab_lib.SPECIAL_TOKENS)
    return LoadedData(splits, vocab, None, {}, None)

  def check_labelled(self, config) -> None:
    """``config.labelled.folder`` (required) and a validation split (``val_name``, or
    ``val_pairs`` > 0 held out of the training pairs)."""
    group = config.labelled
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

  def pinned_files(self, config: Mapping[str, Any]) -> dict[str, str]:
    """The image, text and label files of the splits the run reads (a .mat file that holds
    several of them once), as ``<dataset>/<file name>``."""
    settings = LabelledSettings.of(config["labelled"])
    out = {}
    for name in settings.split_names().values():
      for path, _ in split_paths(settings, name).values():
        out[f"{config['dataset']}/{os.path.basename(path)}"] = path
    return out
