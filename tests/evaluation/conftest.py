"""Shared fixtures for the evaluation tests."""

import warnings

import numpy as np
import pytest


def _load_eccv_caption():
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try:
      import eccv_caption  # pylint: disable=g-import-not-at-top
    except ImportError:
      return None
  return eccv_caption


@pytest.fixture(scope="session")
def eccv_metrics():
  """An ``eccv_caption.Metrics`` with its shipped COCO annotations."""
  mod = _load_eccv_caption()
  if mod is None:
    pytest.skip("eccv_caption (dev extra) is not installed")
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    return mod.Metrics()


@pytest.fixture(scope="session")
def coco_layout(eccv_metrics):
  """Image ids, caption ids (gallery orders) and caption owners of COCO 5K.

  Captions are in ``coco_test_ids`` order; images in order of first
  appearance there, so ``eccv_caption``'s 1K folds (blocks of 5,000 caption
  ids) are our contiguous image folds.
  """
  cap_ids = [int(c) for c in eccv_metrics.coco_ids]
  t2i = eccv_metrics.coco_gts["t2i"]
  owners_ids = [t2i[c][0] for c in cap_ids]
  img_ids = list(dict.fromkeys(owners_ids))
  pos = {i: j for j, i in enumerate(img_ids)}
  owner = np.array([pos[i] for i in owners_ids], np.int64)
  return np.array(img_ids), np.array(cap_ids), owner
