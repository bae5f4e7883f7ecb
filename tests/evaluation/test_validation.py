"""Bad input gets one clear error naming the argument."""

import numpy as np
import pytest

from jitr.evaluation import (
  ClassLabels,
  CrossModalScores,
  EmbeddingScores,
  EvalOptions,
  evaluate_retrieval,
  ndcg_at_k,
  positives_from_lists,
)

SIM = np.zeros((4, 8), np.float32)
OWNER = np.repeat(np.arange(4), 2)


@pytest.mark.parametrize(
  "kwargs,match",
  [
    (dict(caption_to_image=OWNER[:5]), "caption_to_image"),
    (dict(caption_to_image=OWNER, options=EvalOptions(folds=3)), "`folds` must divide"),
    (dict(caption_to_image=OWNER, fold_ids=np.zeros(3, int)), "fold_ids"),
    (dict(caption_to_image=OWNER, fold_ids=np.zeros(4), options=EvalOptions(folds=2)), "not both"),
    (dict(caption_to_image=OWNER, relevance=np.zeros((4, 7))), "relevance"),
    (dict(caption_to_image=OWNER, labels=ClassLabels(np.zeros(3, int))), "labels.images"),
    (dict(caption_to_image=OWNER, labels=ClassLabels(None, np.zeros(8, int))), "labels.images"),
    (
      dict(caption_to_image=OWNER, labels=ClassLabels(np.zeros(4, int), np.zeros(7, int))),
      "labels.captions",
    ),
    (
      dict(
        caption_to_image=OWNER,
        extended_positives={"e": (positives_from_lists([[0]], num_gallery=8),) * 2},
      ),
      "extended_positives",
    ),
    (dict(caption_to_image=OWNER, options=EvalOptions(extended_map=("e",))), "extended_map"),
  ],
)
def test_evaluate_retrieval_errors(kwargs, match):
  with pytest.raises(ValueError, match=match):
    evaluate_retrieval(SIM, **kwargs)


@pytest.mark.parametrize(
  "field,value",
  [
    ("recall_ks", (0,)),
    ("recall_ks", ()),
    ("curve_ks", (0, 1)),
    ("ndcg_ks", ("x",)),
    ("semantic_ks", 5),
    ("semantic_num_relevant", 0),
    ("class_map_k", 0),
    ("folds", 0),
    ("folds", 2.5),
    ("extended_map", "eccv"),
    ("directions", ("x2y",)),
    ("directions", "i2t"),
    ("percent", 1),
    ("chunk_size", 0),
  ],
)
def test_options_errors_name_the_field(field, value):
  with pytest.raises(ValueError, match=f"`{field}`"):
    EvalOptions(**{field: value})


def test_options_are_frozen_and_normalised():
  options = EvalOptions(recall_ks=[10, 1, 1], ndcg_ks=[], directions=["t2i"], folds=np.int64(5))
  assert options.recall_ks == (1, 10) and options.ndcg_ks == () and options.directions == ("t2i",)
  assert options.folds == 5 and type(options.folds) is int
  assert options.all_recall_ks == (1, 2, 3, 5, 10, 20, 50, 100)
  assert options == EvalOptions(recall_ks=(1, 10), ndcg_ks=(), directions=("t2i",), folds=5)
  assert hash(options) == hash(
    EvalOptions(recall_ks=(10, 1), ndcg_ks=(), directions=("t2i",), folds=5)
  )
  with pytest.raises(AttributeError):
    options.percent = False  # type: ignore[misc]


def test_source_errors():
  with pytest.raises(ValueError, match="sim"):
    evaluate_retrieval(np.zeros(5), caption_to_image=OWNER)
  with pytest.raises(ValueError, match="gallery"):
    EmbeddingScores(np.zeros((3, 4)), np.zeros((5, 3)))
  with pytest.raises(ValueError, match="transposed"):
    CrossModalScores(
      EmbeddingScores(np.zeros((3, 4)), np.zeros((5, 4))),
      EmbeddingScores(np.zeros((3, 4)), np.zeros((5, 4))),
    )
  with pytest.raises(ValueError, match="relevance"):
    ndcg_at_k(SIM, np.zeros((4, 9)))
