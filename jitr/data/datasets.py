"""The datasets jitr trains on, by name: what each one is and where its files live.

:data:`DATASETS` is the one registry of ``config.dataset`` values. Code that needs to
know something of a dataset (is its relevance exact, does it read a ``*_precomp``
folder, its splits, its captions per image, which config fields name its data) asks
:func:`dataset_info` instead of comparing the name as a string.

Besides the registered datasets, any ``NAME_precomp`` is a precomp dataset: the folder
``<precomp_root>/NAME_precomp/`` with ``train``, ``dev`` and ``test`` splits, whose
captions per image ``config.captions_per_image`` must give (:func:`captions_per_image`).
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
    captions_per_image: each image's captions, in order (caption ``j`` belongs to image
      ``j // captions_per_image``); 0 when the name does not say (a precomp folder of
      another name: ``config.captions_per_image`` gives it).
    splits: the splits its files hold, the training split first.
  """

  name: str
  kind: str
  exact_relevance: bool
  data_fields: tuple[str, ...] = ()
  captions_per_image: int = 5
  splits: tuple[str, ...] = ("train", "dev", "test")

  def data_name(self, config: Mapping[str, Any]) -> str:
    """The dataset with its data fields, e.g. ``jitr_shapes/tiny`` or ``f30k_precomp``."""
    return "/".join([self.name, *(str(config.get(f)) for f in self.data_fields)])


#: The datasets by name (``config.dataset``): how each one is read.
DATASETS: dict[str, DatasetInfo] = {
  info.name: info
  for info in (
    DatasetInfo(
      SHAPES,
      "shapes",
      exact_relevance=True,
      data_fields=("shapes_config",),
      splits=("train", "val", "test"),
    ),
    DatasetInfo("f30k_precomp", "precomp", exact_relevance=False),
    # test: COCO 1K (SCAN's split), testall: COCO 5K
    DatasetInfo(
      "coco_precomp", "precomp", exact_relevance=False, splits=("train", "dev", "test", "testall")
    ),
    # IAPR TC-12 as LSEH releases it (yangong23/VSEnetworksLSEH): one caption per image
    DatasetInfo("iaprtc12_precomp", "precomp", exact_relevance=False, captions_per_image=1),
  )
}
PRECOMP_SUFFIX = "_precomp"


def dataset_info(name: str) -> DatasetInfo:
  """The registered dataset ``name``.

  Raises:
    ValueError: an unknown name (the message names ``config.dataset`` and the valid ones).
  """
  if name in DATASETS:
    return DATASETS[name]
  if isinstance(name, str) and name.endswith(PRECOMP_SUFFIX) and name != PRECOMP_SUFFIX:
    return DatasetInfo(
      name,
      "precomp",
      exact_relevance=False,
      data_fields=("captions_per_image",),
      captions_per_image=0,
    )
  raise ValueError(
    f"config.dataset: expected one of {', '.join(map(repr, DATASETS))} or the name of any "
    f"precomp folder, NAME_precomp; got {name!r}"
  )


def captions_per_image(info: DatasetInfo, given: int) -> int:
  """The captions per image of a run on ``info``: ``given`` (``config.captions_per_image``)
  when positive, else the dataset's own.

  Raises:
    ValueError: neither says (a precomp folder of another name without
      ``config.captions_per_image``), or ``given`` is not a non-negative integer.
  """
  if isinstance(given, bool) or not isinstance(given, int) or given < 0:
    raise ValueError(
      f"config.captions_per_image: expected a non-negative integer (0: the dataset's own), "
      f"got {given!r}"
    )
  if given:
    return given
  if not info.captions_per_image:
    raise ValueError(
      f"config.captions_per_image: {info.name} is not a dataset jitr knows; give its "
      "captions per image (5 for Flickr30K / COCO-style folders, 1 for IAPR TC-12-style)"
    )
  return info.captions_per_image
