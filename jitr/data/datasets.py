"""The datasets jitr trains on, by name: what each one is and where its files live.

:data:`DATASETS` is the one registry of ``config.dataset`` values. Code that needs to
know something of a dataset (is its relevance exact, does it read a ``*_precomp``
folder, which config fields name its data) asks the registry instead of comparing the
name as a string.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

SHAPES = "jitr_shapes"


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
  """One dataset of :data:`DATASETS`.

  Attributes:
    name: its ``config.dataset`` value.
    kind: ``"shapes"`` (the built-in TFDS dataset, generated under ``config.data_dir``)
      or ``"precomp"`` (a ``<precomp_root>/<name>/`` folder of region features and
      caption files).
    exact_relevance: whether the dataset knows the true relevance of every (image,
      caption) pair (``oracle`` graded sources and NDCG against the truth need it).
    data_fields: the config fields that name the data a run trains on, besides
      ``dataset`` itself.
  """

  name: str
  kind: str
  exact_relevance: bool
  data_fields: tuple[str, ...] = ()

  def data_name(self, config: Mapping[str, Any]) -> str:
    """The dataset with its data fields, e.g. ``jitr_shapes/tiny`` or ``f30k_precomp``."""
    return "/".join([self.name, *(str(config.get(f)) for f in self.data_fields)])


#: The datasets by name (``config.dataset``): how each one is read.
DATASETS: dict[str, DatasetInfo] = {
  info.name: info
  for info in (
    DatasetInfo(SHAPES, "shapes", exact_relevance=True, data_fields=("shapes_config",)),
    DatasetInfo("f30k_precomp", "precomp", exact_relevance=False),
    DatasetInfo("coco_precomp", "precomp", exact_relevance=False),
  )
}


def dataset_info(name: str) -> DatasetInfo:
  """The registered dataset ``name``.

  Raises:
    ValueError: an unknown name (the message names ``config.dataset`` and the valid ones).
  """
  if name not in DATASETS:
    raise ValueError(
      f"config.dataset: expected one of {', '.join(map(repr, DATASETS))}, got {name!r}"
    )
  return DATASETS[name]
