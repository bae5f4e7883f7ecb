"""``jitr_shapes`` splits as :class:`~jitr.data.pairs.RetrievalSplit` (regions, tokens, oracle)."""

from __future__ import annotations

import numpy as np

from jitr.data import pairs
from jitr.data import vocab as vocab_lib
from jitr.data.shapes import captions as shapes_captions
from jitr.data.shapes import relevance as shapes_relevance


def retrieval_split(
  arrays: dict,
  vocab: vocab_lib.Vocab,
  *,
  max_len: int | None = 48,
  vectors: dict | None = None,
  topk: dict | None = None,
  encoded: tuple[np.ndarray, np.ndarray] | None = None,
) -> pairs.RetrievalSplit:
  """From :func:`jitr.data.shapes.tfds.load_split` arrays: region features as
  images, captions tokenised with ``vocab`` (cut to ``max_len``; ``None``: uncut) unless
  ``encoded`` gives their ``(tokens, lengths)`` already, caption ``5·i + k`` owned by
  image i, and the exact relevance as the oracle."""
  n_img = len(arrays["regions"])
  if encoded is None:
    encoded = vocab.encode_batch(arrays["captions"], max_len=max_len)
  tokens, lengths = encoded
  scenes = arrays["scene"]
  facts = arrays["caption_facts"].reshape(-1, shapes_captions.FACT_FIELDS)

  def oracle(images: np.ndarray, captions: np.ndarray) -> np.ndarray:
    return shapes_relevance.relevance_matrix(scenes[images], facts[captions])

  return pairs.RetrievalSplit(
    images=arrays["regions"].astype(np.float32),
    image_mask=arrays["region_mask"].astype(bool),
    tokens=tokens,
    lengths=lengths,
    caption_image=np.repeat(np.arange(n_img), len(arrays["captions"]) // n_img),
    vectors=vectors or {},
    topk=topk or {},
    oracle=oracle,
  )
