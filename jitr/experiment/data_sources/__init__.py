"""The kinds of dataset a run reads, each one :class:`DataSource` registered by its kind in
:data:`DATA_SOURCES`: jitr_shapes, ``*_precomp`` folders, folders of labelled vectors and
image folders with Karpathy's split file.

A dataset of :data:`jitr.data.datasets.DATASETS` names its kind
(:attr:`~jitr.data.datasets.DatasetInfo.kind`); :func:`data_source` gives the source of a
``config.dataset``, and code that does something by the kind of a dataset calls that
source instead of comparing the kind. A new kind is one :class:`DataSource` subclass and
one entry here (with its datasets in ``DATASETS``).
"""

from __future__ import annotations

from jitr.data.datasets import DatasetInfo, dataset_info
from jitr.experiment.data_sources.images import ImagesSource
from jitr.experiment.data_sources.labelled import LabelledSource
from jitr.experiment.data_sources.loading import LoadedData
from jitr.experiment.data_sources.precomp import PrecompSource
from jitr.experiment.data_sources.shapes import ShapesSource
from jitr.experiment.data_sources.source import DataSource, Teachers

#: The sources by kind (``DatasetInfo.kind``).
DATA_SOURCES: dict[str, DataSource] = {
  source.kind: source
  for source in (ShapesSource(), PrecompSource(), LabelledSource(), ImagesSource())
}


def source_of(info: DatasetInfo) -> DataSource:
  """The :class:`DataSource` of the dataset ``info``."""
  return DATA_SOURCES[info.kind]


def data_source(dataset: str) -> DataSource:
  """The :class:`DataSource` of the dataset named ``dataset`` (``config.dataset``).

  Raises:
    ValueError: an unknown name (:func:`jitr.data.datasets.dataset_info`).
  """
  return source_of(dataset_info(dataset))


__all__ = [
  "DATA_SOURCES",
  "DataSource",
  "LoadedData",
  "Teachers",
  "data_source",
  "source_of",
]
