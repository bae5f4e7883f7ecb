"""The official VSE∞ training augmentation of a whole training batch.

:class:`TrainAugment` rewrites a batch of :func:`jitr.data.pairs.make_batch` in place of
the per-item augmentation of woodfrog/vse_infty's ``PrecompRegionDataset``:

- Words (``word_probability`` > 0): each row's caption is rebuilt from its words
  (:class:`jitr.data.wordpiece_vocab.CaptionWords`) by
  :func:`jitr.data.caption_augment.augment_caption`, cut to ``max_len`` with ``[SEP]``
  last and padded with ``[PAD]`` to the batch's width (an augmented caption is never
  longer than the original); ``lengths`` follow.
- Regions (``region_drop`` > 0): each row draws one uniform number per region, and a
  region whose draw is at most ``region_drop`` is dropped by clearing its
  ``image_mask`` entry (a batch without a mask gets one, every region valid first). GPO
  pools over the valid regions alike, so for the pooled embedding this is the official's
  removal of the rows. The image tower's BatchNorm, which runs over every row of the
  batch, still sees a dropped region's features, where the official (which removes the
  region and pads the batch with zeros to its longest kept set) counts zero rows instead:
  the two differ in the BatchNorm's batch statistics only. A row whose every region would
  be dropped keeps them all (the official's ``pack_padded_sequence`` refuses an empty
  region set).

The draws come from one ``numpy.random.Generator`` per batch, taken row by row, words
first: :func:`jitr.data.pairs.epoch_batches` seeds it from ``(seed, epoch, batch)``, so a
batch is the same whenever it is built (a resume included). Evaluation batches never
pass through here.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jitr.data.caption_augment import augment_caption
from jitr.data.wordpiece import WordPiece
from jitr.data.wordpiece_vocab import CaptionWords, truncate


@dataclasses.dataclass(frozen=True)
class TrainAugment:
  """The batch augmentation (module docstring).

  Attributes:
    word_probability: the probability per word of the caption augmentation (0: none).
    region_drop: the probability that a row drops each region (0: none).
    tokenizer: the WordPiece of the captions (needed with ``word_probability`` > 0).
    words: the training captions' words (needed with ``word_probability`` > 0).
    max_len: the ids a caption is cut to.
  """

  word_probability: float
  region_drop: float
  tokenizer: WordPiece | None
  words: CaptionWords | None
  max_len: int

  def __call__(self, batch: dict, rng: np.random.Generator) -> dict:
    out = dict(batch)
    if self.word_probability > 0:
      out["tokens"], out["lengths"] = self.augment_tokens(batch, rng)
    if self.region_drop > 0:
      out["image_mask"] = drop_region_mask(batch, rng, self.region_drop)
    return out

  def augment_tokens(self, batch: dict, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(tokens, lengths)`` of the batch's captions, augmented row by row."""
    tokenizer = self.tokenizer
    tokens = np.full_like(batch["tokens"], tokenizer.pad_id)
    lengths = np.zeros_like(batch["lengths"])
    for row, caption in enumerate(batch["caption_indices"]):
      ids = augment_caption(self.words.of(int(caption)), rng, tokenizer, self.word_probability)
      ids = truncate(ids, self.max_len, tokenizer.sep_id)[: tokens.shape[1]]
      tokens[row, : len(ids)] = ids
      lengths[row] = len(ids)
    return tokens, lengths


def drop_region_mask(batch: dict, rng: np.random.Generator, probability: float) -> np.ndarray:
  """The batch's ``image_mask`` ``[B, R]`` with each region cleared when its draw is at
  most ``probability``; a row left without a valid region keeps its mask."""
  images = batch["images"]
  if images.ndim != 3:
    raise ValueError(
      f"config.image.region_drop: the images have shape {images.shape}; expected region "
      "features [B, R, D]"
    )
  mask = batch.get("image_mask")
  mask = np.ones(images.shape[:2], bool) if mask is None else np.asarray(mask, bool)
  kept = mask & (rng.random(mask.shape) > probability)
  empty = ~kept.any(axis=1)
  kept[empty] = mask[empty]
  return kept
