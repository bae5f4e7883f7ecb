"""Bad input gets one clear error naming the argument."""

import numpy as np
import pytest

from jitr.evaluation import (
  CrossModalScores,
  EmbeddingScores,
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
    (dict(caption_to_image=OWNER, folds=3), "num_folds"),
    (dict(caption_to_image=OWNER, folds=np.zeros(3, int)), "folds"),
    (dict(caption_to_image=OWNER, relevance=np.zeros((4, 7))), "relevance"),
    (dict(caption_to_image=OWNER, recall_ks=(0,)), "recall_ks"),
    (dict(caption_to_image=OWNER, directions=("x2y",)), "directions"),
    (dict(caption_to_image=OWNER, image_labels=np.zeros(3, int)), "image_labels"),
    (dict(caption_to_image=OWNER, caption_labels=np.zeros(8, int)), "caption_labels"),
    (
      dict(
        caption_to_image=OWNER,
        extended_positives={"e": (positives_from_lists([[0]], num_gallery=8),) * 2},
      ),
      "extended_positives",
    ),
  ],
)
def test_evaluate_retrieval_errors(kwargs, match):
  with pytest.raises(ValueError, match=match):
    evaluate_retrieval(SIM, **kwargs)


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
