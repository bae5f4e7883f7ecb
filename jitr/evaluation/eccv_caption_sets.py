"""ECCV Caption's positives (Chun et al., ECCV 2022) on COCO's 5K test split, in the order
of the standard ``testall`` split (SCAN's and VSE∞'s ``coco_precomp/testall_*``).

The ``eccv_caption`` package ships the annotations as COCO ids: ``coco_test_ids.npy``, the
25,000 caption ids in ``testall`` order (image ``i`` owns captions ``5i`` to ``5i + 4``),
COCO's own pairs (``original_*``) and ECCV Caption's machine-and-human-verified ones
(``eccv_*``: 1,261 image queries, 1,332 caption queries). :func:`eccv_positives` turns them
into :class:`~jitr.evaluation.positives.PositiveSets` over the split's rows, for
``evaluate_retrieval``'s ``extended_positives`` (queries without ECCV annotations have no
positives and are left out of the means, as ``eccv_caption`` iterates over its own
queries only).
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
import warnings
from typing import Any

import numpy as np

from jitr.evaluation.positives import PositiveSets, positives_from_id_dicts

NUM_IMAGES, NUM_CAPTIONS = 5000, 25000
# the extended positive set's name: its report keys are eccv/{i2t,t2i}/mAP@R, R-P, R@K
NAME = "eccv"
INSTALL = "pip install eccv-caption==0.1.0"


def _data_folder() -> Any:
  """The ``eccv_caption`` package's ``data`` folder; one line saying how to install it."""
  if importlib.util.find_spec("eccv_caption") is None:
    raise ValueError(
      f"ECCV Caption: its annotations come with the eccv_caption package ({INSTALL})"
    )
  with warnings.catch_warnings():  # its __init__ warns when ujson is not installed
    warnings.simplefilter("ignore")
    return importlib.resources.files("eccv_caption") / "data"


def _ids(mapping: dict[str, list]) -> dict[int, list[int]]:
  return {int(k): [int(v) for v in values] for k, values in mapping.items()}


def eccv_positives(caption_image: np.ndarray) -> tuple[PositiveSets, PositiveSets]:
  """``(i2t, t2i)`` ECCV Caption positives of the split whose captions' images are
  ``caption_image`` (``[25000]``: COCO 5K in ``testall`` order); another split is refused
  in one line naming what ECCV Caption needs."""
  caption_image = np.asarray(caption_image)
  layout = np.repeat(np.arange(NUM_IMAGES), NUM_CAPTIONS // NUM_IMAGES)
  if caption_image.shape != layout.shape or not np.array_equal(caption_image, layout):
    raise ValueError(
      f"ECCV Caption: the split has {len(caption_image)} captions of "
      f"{len(np.unique(caption_image))} images; expected COCO's 5K test split "
      f"({NUM_IMAGES} images, 5 captions each in the order of the standard testall files)"
    )
  folder = _data_folder()
  caption_ids = [int(c) for c in np.load(str(folder / "coco_test_ids.npy"))]
  owners = _ids(json.loads((folder / "original_caption_to_image.json").read_text()))
  image_ids = list(dict.fromkeys(owners[c][0] for c in caption_ids))
  i2t = _ids(json.loads((folder / "eccv_image_to_caption.json").read_text()))
  t2i = _ids(json.loads((folder / "eccv_caption_to_image.json").read_text()))
  return (
    positives_from_id_dicts(i2t, query_ids=image_ids, gallery_ids=caption_ids),
    positives_from_id_dicts(t2i, query_ids=caption_ids, gallery_ids=image_ids),
  )
