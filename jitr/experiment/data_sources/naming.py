"""The name of a run's data: its dataset and the config fields that pick its files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jitr.data.datasets import dataset_info


def run_data_name(config: Mapping[str, Any]) -> str:
  """A run config's data, e.g. ``jitr_shapes/tiny`` or ``f30k_precomp``
  (:meth:`jitr.data.datasets.DatasetInfo.data_name` of ``config.dataset`` with the values
  of its data fields)."""
  info = dataset_info(config["dataset"])
  return info.data_name(**{field: config.get(field) for field in info.data_fields})
