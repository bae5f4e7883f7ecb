"""ECCV Caption's positives on COCO's 5K test split as jitr-eval --eccv builds them, equal
to those of ``eccv_caption``'s own loaded annotations on the gallery order its tests use,
and a split of another layout refused in one line."""

import numpy as np
import pytest

from jitr.evaluation import positives_from_id_dicts
from jitr.evaluation.eccv_caption_sets import eccv_positives


def test_the_positives_are_eccv_captions_own(eccv_metrics, coco_layout):
  img_ids, cap_ids, owner = coco_layout
  np.testing.assert_array_equal(owner, np.repeat(np.arange(5000), 5))  # testall's layout
  i2t, t2i = eccv_positives(owner)
  gts = eccv_metrics.eccv_gts
  want_i2t = positives_from_id_dicts(gts["i2t"], query_ids=img_ids, gallery_ids=cap_ids)
  want_t2i = positives_from_id_dicts(gts["t2i"], query_ids=cap_ids, gallery_ids=img_ids)
  for got, want in ((i2t, want_i2t), (t2i, want_t2i)):
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.num_positives, want.num_positives)
  # ECCV Caption's queries: 1,261 images and 1,332 captions have positives
  assert (int(i2t.has_positive.sum()), int(t2i.has_positive.sum())) == (1261, 1332)


def test_another_split_is_refused_in_one_line():
  with pytest.raises(ValueError) as err:
    eccv_positives(np.repeat(np.arange(1000), 5))
  assert str(err.value) == (
    "ECCV Caption: the split has 5000 captions of 1000 images; expected COCO's 5K test split "
    "(5000 images, 5 captions each in the order of the standard testall files)"
  )
