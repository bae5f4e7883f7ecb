"""One kind of dataset as one object: :class:`DataSource`.

Everything jitr does differently by the kind of a dataset
(:attr:`jitr.data.datasets.DatasetInfo.kind`) is a method of that kind's source: how a run
loads it, which config fields it requires, the files a run of it pins, each split's files
that two workdirs must share, and the captions of a split that semantic scores are read
against. What differs between datasets of one kind (splits, captions per image, exact
relevance, the best checkpoint's metric, the text input) stays in their
:class:`~jitr.data.datasets.DatasetInfo`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from typing import Any

from jitr.data.datasets import DatasetInfo, captions_per_image
from jitr.data.pairs import RetrievalSplit
from jitr.experiment.data_sources.loading import LoadedData
from jitr.relevance.captions_io import CaptionSet

Splits = dict[str, RetrievalSplit]
Teachers = Callable[[Any, Splits, Any, CaptionSet, str], Splits]
"""``(config, splits, vocab, training captions, data_dir) -> splits``: the splits with the
teachers' embeddings of the training captions
(:func:`jitr.experiment.teachers.with_teachers`)."""


class DataSource(abc.ABC):
  """One kind of dataset (``kind``, its key in
  :data:`jitr.experiment.data_sources.DATA_SOURCES`)."""

  kind: str = ""

  @abc.abstractmethod
  def load(
    self,
    config,
    data_dir: str,
    *,
    teachers: Teachers | None,
    vocab,
    say: Callable[[str], None],
  ) -> LoadedData:
    """The :class:`LoadedData` of ``config.dataset``; ``teachers`` adds the teachers'
    embeddings to the training split (``None``: none added); ``vocab`` replaces the run's
    own vocabulary; ``say`` gets one short line per phase."""

  def check_config(self, config, dataset: DatasetInfo) -> None:
    """Refuses, in one line naming the field, a ``config.test_split`` that is not one of
    :meth:`test_splits` or a ``config.captions_per_image`` the dataset cannot have."""
    check_test_split(config, self.test_splits(dataset))
    captions_per_image(dataset, config.captions_per_image)

  def test_splits(self, dataset: DatasetInfo) -> tuple[str, ...]:
    """The splits ``config.test_split`` may name."""
    del dataset
    return ("test",)

  def check_labelled(self, config) -> None:
    """Refuses what this kind requires of ``config.labelled`` and it lacks (nothing)."""
    del config

  def pinned_files(self, config: Mapping[str, Any]) -> dict[str, str]:
    """``{role: path}`` of the dataset's files a run of ``config`` reads (none)."""
    del config
    return {}

  def split_roles(self, config: Mapping[str, Any], split: str) -> tuple[str, ...]:
    """The roles (of :meth:`pinned_files`) of the files that hold the run's ``split``
    (``train``, ``val`` or ``test``), which two workdirs scored together must share
    (none)."""
    del config, split
    return ()

  def split_captions(self, config, data_dir: str, split: str) -> tuple[str, CaptionSet]:
    """``(file split, captions)``: the name of the run's ``split`` among the dataset's files
    and its captions as ``jitr-precompute`` reads a caption file; a kind without caption
    files refuses in one line."""
    del data_dir, split
    raise ValueError(f"semantic scores: {config.dataset} has no caption files to score")


def check_test_split(config, splits: tuple[str, ...]) -> None:
  """``config.test_split``, when the config has one, must be one of ``splits``."""
  if "test_split" not in config:
    return
  if config.test_split not in splits:
    raise ValueError(
      f"config.test_split: expected one of {', '.join(map(repr, splits))} "
      f"(the splits of {config.dataset}), got {config.test_split!r}"
    )
