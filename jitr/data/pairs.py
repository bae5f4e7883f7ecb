"""In-memory retrieval splits and deterministic batches of (image, caption) pairs.

A :class:`RetrievalSplit` holds a split's image features, its captions (tokenised, or
text vectors for a labelled vector dataset) and the caption -> image ownership (any
dataset: ``jitr_shapes``, ``*_precomp``, ``wiki`` ...), with the images' class labels
where the dataset has them.
:func:`epoch_batches` yields the training batches of one epoch: a permutation of
the captions seeded by ``(seed, epoch)`` cut into ``batch_size`` pairs, so the
same epoch always gives the same batches (what exact resumption needs).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np

from jitr.data import vocab as vocab_lib
from jitr.data.batch_keys import (
  CLASS_LABELS,
  POSITIVE_CLASSES,
  TEXT_VECTORS,
  teacher_keys,
  topk_keys,
  vectors_keys,
)
from jitr.data.image_files import is_image_files
from jitr.data.token_chunks import chunk_rows, chunked_tokens, is_token_chunk, length_sorted

# (image indices [B], caption indices [B]) -> relevance rows [B, B]
OracleFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
# (a training batch, its Generator) -> the augmented batch
BatchAugment = Callable[[dict, np.random.Generator], dict]


@dataclasses.dataclass(frozen=True)
class RetrievalSplit:
  """One split: ``images [N_img, ...]``, optional ``image_mask [N_img, K]``,
  ``tokens [N_cap, L]``/``lengths [N_cap]`` (both ``None`` for a split whose captions are
  ``text_vectors [N_cap, D]``, a labelled vector dataset's texts), ``caption_image
  [N_cap]`` (owner of each caption; an image's captions are ``image_captions[i]``),
  optional ``class_labels [N_img, C]`` (bool class memberships of each image, its
  captions' too; with ``class_positives`` the images sharing a class are each other's
  positives in training batches, else only an image's own captions are), the stored
  relevance data of named estimators — ``vectors[name]`` ``[N_cap, D]``
  (unit-norm caption vectors of a cosine estimator) and ``topk[name]`` ``(indices
  [N_img, K], scores [N_img, K])`` (an image's K best captions) — the
  embeddings of teacher dual encoders, ``teacher[workdir]`` ``(images [N_img, D],
  captions [N_cap, D])``, an optional exact-relevance ``oracle``, optional
  ``concept_labels [N_img, C]`` (CVSE's multi-hot concepts of each image: what training
  batches carry) and ``caption_concept_labels [N_cap, C]`` (the concepts each caption
  mentions: what CVSE's evaluation encodes the captions with)."""

  images: np.ndarray
  tokens: np.ndarray | None
  lengths: np.ndarray | None
  caption_image: np.ndarray
  image_mask: np.ndarray | None = None
  vectors: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
  topk: Mapping[str, tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=dict)
  oracle: OracleFn | None = None
  teacher: Mapping[str, tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=dict)
  concept_labels: np.ndarray | None = None
  caption_concept_labels: np.ndarray | None = None
  text_vectors: np.ndarray | None = None
  class_labels: np.ndarray | None = None
  class_positives: bool = False
  epoch_captions: np.ndarray | None = None
  """The caption indices a training epoch draws its batches from (a training subset:
  :func:`!training_subset`); ``None``: every caption."""

  def __post_init__(self):
    n_cap = len(self.caption_image)
    self._check_texts(n_cap)
    labels = self.concept_labels
    if labels is not None and (labels.ndim != 2 or len(labels) != len(self.images)):
      raise ValueError(
        f"RetrievalSplit.concept_labels: expected [{len(self.images)}, C] (one row per "
        f"image), got {labels.shape}"
      )
    labels = self.caption_concept_labels
    if labels is not None and (labels.ndim != 2 or len(labels) != n_cap):
      raise ValueError(
        f"RetrievalSplit.caption_concept_labels: expected [{n_cap}, C] (one row per "
        f"caption), got {labels.shape}"
      )
    labels = self.class_labels
    if labels is not None and (labels.ndim != 2 or len(labels) != len(self.images)):
      raise ValueError(
        f"RetrievalSplit.class_labels: expected [{len(self.images)}, C] (one row per "
        f"image), got {labels.shape}"
      )
    if self.class_positives and labels is None:
      raise ValueError("RetrievalSplit.class_positives: needs class_labels")
    for name, v in self.vectors.items():
      if len(v) != n_cap:
        raise ValueError(
          f"RetrievalSplit.vectors[{name!r}]: {len(v)} rows, expected {n_cap} (one per caption)"
        )
    for name, (idx, val) in self.topk.items():
      if idx.shape != val.shape or len(idx) != len(self.images):
        raise ValueError(
          f"RetrievalSplit.topk[{name!r}]: expected indices and scores [{len(self.images)}, K], "
          f"got {idx.shape} and {val.shape}"
        )
    for name, (img, cap) in self.teacher.items():
      if img.ndim != 2 or cap.ndim != 2 or len(img) != len(self.images) or len(cap) != n_cap:
        raise ValueError(
          f"RetrievalSplit.teacher[{name!r}]: expected image and caption embeddings "
          f"[{len(self.images)}, D] and [{n_cap}, D], got {img.shape} and {cap.shape}"
        )
    if n_cap and (self.caption_image.min() < 0 or self.caption_image.max() >= len(self.images)):
      raise ValueError(f"RetrievalSplit.caption_image: indices must lie in [0, {len(self.images)})")
    counts = np.bincount(self.caption_image, minlength=len(self.images))
    if counts.min() != counts.max():
      raise ValueError(
        "RetrievalSplit.caption_image: every image needs the same number of captions, "
        f"got between {counts.min()} and {counts.max()}"
      )

  def _check_texts(self, n_cap: int) -> None:
    """The captions are ``tokens`` and ``lengths`` or ``text_vectors``, one row per caption."""
    if (self.tokens is None) != (self.lengths is None) or (
      (self.tokens is None) == (self.text_vectors is None)
    ):
      raise ValueError(
        "RetrievalSplit: expected the captions as tokens and lengths or as text_vectors"
      )
    for name in ("tokens", "lengths", "text_vectors"):
      rows = getattr(self, name)
      if rows is not None and len(rows) != n_cap:
        raise ValueError(
          f"RetrievalSplit.{name}: {len(rows)} rows, expected {n_cap} (one per caption)"
        )

  @property
  def num_images(self) -> int:
    return len(self.images)

  @property
  def num_captions(self) -> int:
    return len(self.caption_image)

  @functools.cached_property
  def image_captions(self) -> np.ndarray:
    """``[N_img, captions_per_image]`` caption indices of each image (computed once:
    every batch with stored vectors looks it up)."""
    order = np.argsort(self.caption_image, kind="stable")
    return order.reshape(self.num_images, -1)


# The caption widths a training batch's tokens are cut to (config.token_buckets' default).
TOKEN_BUCKETS = (8, 12, 16, 24, 32, 48)


def batch_width(split: RetrievalSplit, captions: np.ndarray, buckets: Sequence[int]) -> int:
  """How many token columns the batch of ``captions`` keeps: the smallest of ``buckets``
  holding its longest caption (that caption's length beyond the last), or with no
  ``buckets`` the split's longest caption, one width for every batch."""
  if not len(buckets):
    return max(int(split.lengths.max(initial=1)), 1)
  return vocab_lib.bucket_length(split.lengths[captions], buckets)


def make_batch(
  split: RetrievalSplit,
  captions: np.ndarray,
  *,
  buckets: Sequence[int] = TOKEN_BUCKETS,
  pixels: bool = True,
) -> dict[str, np.ndarray]:
  """The pair batch of the given caption indices: row i = (image of caption i, caption i).

  Tokens are trimmed to :func:`!batch_width`: the smallest bucket holding the longest
  caption, so the text encoder scans no more padding than needed while jit sees few
  shapes (each width compiles the train step once; ``buckets=()``: one width).
  Stored relevance data goes in under the keys of :mod:`!jitr.data.batch_keys`: each
  vectors estimator's caption vectors ``[B, D]`` and its references' ``[B, R, D]`` (the
  vectors of each row's image's own captions), each top-K estimator's indices and
  scores ``[B, K]`` (with ``caption_indices`` ``[B]``), each teacher's image and caption
  embeddings ``[B, D]``; the exact relevance as ``oracle_relevance`` rows; each row's
  image's ``concept_labels`` ``[B, C]``. A split of text vectors gives each row's
  ``text_vectors`` ``[B, D]`` instead of tokens; a split with class labels gives each
  row's image's ``class_labels`` ``[B, C]``, and with ``class_positives`` the same rows
  as ``positive_classes`` (:mod:`!jitr.data.batch_keys`). A split of image files
  (:class:`!jitr.data.image_files.ImageFiles`) gives the images' evaluation inputs, or with
  ``pixels=False`` their indices (decoded later, :func:`epoch_batches`).
  """
  images = split.caption_image[captions]
  batch = {"images": split.images[images] if pixels else images}
  if split.tokens is not None:
    batch["tokens"] = split.tokens[captions, : batch_width(split, captions, buckets)]
    batch["lengths"] = split.lengths[captions].astype(np.int32)
  if split.text_vectors is not None:
    batch[TEXT_VECTORS] = split.text_vectors[captions].astype(np.float32)
  batch["image_ids"] = images.astype(np.int32)
  batch["caption_indices"] = captions.astype(np.int32)
  batch["valid"] = np.ones(len(captions), bool)
  if split.class_labels is not None:
    batch[CLASS_LABELS] = split.class_labels[images].astype(bool)
    if split.class_positives:
      batch[POSITIVE_CLASSES] = batch[CLASS_LABELS]
  if split.image_mask is not None:
    batch["image_mask"] = split.image_mask[images]
  for name, vectors in split.vectors.items():
    caption_key, references_key = vectors_keys(name)
    batch[caption_key] = vectors[captions]
    batch[references_key] = vectors[split.image_captions[images]]
  for name, (indices, scores) in split.topk.items():
    indices_key, scores_key = topk_keys(name)
    batch[indices_key] = indices[images].astype(np.int32)
    batch[scores_key] = scores[images].astype(np.float32)
  for name, (image_vectors, caption_vectors) in split.teacher.items():
    image_key, caption_key = teacher_keys(name)
    batch[image_key] = image_vectors[images]
    batch[caption_key] = caption_vectors[captions]
  if split.oracle is not None:
    batch["oracle_relevance"] = split.oracle(images, captions).astype(np.float32)
  if split.concept_labels is not None:
    batch["concept_labels"] = split.concept_labels[images].astype(np.float32)
  return batch


def epoch_pool(split: RetrievalSplit) -> np.ndarray:
  """The caption indices an epoch permutes: ``split.epoch_captions``, else all."""
  if split.epoch_captions is None:
    return np.arange(split.num_captions)
  return split.epoch_captions


def training_subset(split: RetrievalSplit, fraction: float) -> RetrievalSplit:
  """``split`` whose epochs draw from the captions of ``⌊fraction · N_img⌋`` of its images
  (SAM's reduced training data: 10 % of Flickr30K's 29,000 images is 2,900, 3 % of COCO's
  113,287 is 3,398), the first of ``numpy.random.default_rng(0).permutation(N_img)``: the
  same images for every seed, network and loss. The arrays stay whole (stored relevance
  and top-K lists keep their caption indices); ``fraction`` 1 returns ``split``.

  >>> import numpy as np
  >>> split = RetrievalSplit(np.zeros((10, 1, 2)), np.zeros((20, 3), np.int32),
  ...                        np.ones(20, np.int32), np.repeat(np.arange(10), 2))
  >>> sub = training_subset(split, 0.3)
  >>> sorted(set(sub.caption_image[sub.epoch_captions].tolist()))  # 3 images, their captions
  [2, 4, 6]
  >>> len(sub.epoch_captions)
  6
  """
  if not 0.0 < fraction <= 1.0:
    raise ValueError(f"config.train_fraction: expected a fraction in (0, 1], got {fraction}")
  if fraction == 1.0:
    return split
  count = int(fraction * split.num_images)
  if count == 0:
    raise ValueError(
      f"config.train_fraction: {fraction} of the {split.num_images} training images keeps none"
    )
  images = np.sort(np.random.default_rng(0).permutation(split.num_images)[:count])
  captions = split.image_captions[images].reshape(-1)
  return dataclasses.replace(split, epoch_captions=np.sort(captions))


def steps_per_epoch(split: RetrievalSplit, batch_size: int) -> int:
  """Full batches per epoch (the remainder of the permutation is dropped)."""
  captions = len(epoch_pool(split))
  steps = captions // batch_size
  if steps == 0:
    kept = "" if split.epoch_captions is None else " kept for training"
    raise ValueError(
      f"batch_size {batch_size} is larger than the split's {captions} captions{kept}"
    )
  return steps


@dataclasses.dataclass(frozen=True)
class TokenChunking:
  """How :func:`epoch_batches` cuts a batch's tokens into length-sorted chunks
  (:mod:`!jitr.data.token_chunks`); the default leaves ``tokens`` whole."""

  chunks: int = 1
  """Chunks of each batch's tokens (``config.token_chunks``); 1: one ``tokens`` array."""
  shards: int = 1
  """Device blocks of a batch, each sorted by caption length on its own (the device
  count)."""


def epoch_batches(
  split: RetrievalSplit,
  *,
  batch_size: int,
  seed: int,
  epoch: int,
  rows: slice = slice(None),
  buckets: Sequence[int] = TOKEN_BUCKETS,
  augment: BatchAugment | None = None,
  chunking: TokenChunking = TokenChunking(),
) -> Iterator[dict[str, np.ndarray]]:
  """The batches of one epoch, identical for the same ``(seed, epoch)``.

  ``rows`` selects this process's rows of each global batch (multi-host input
  sharding); the oracle relevance keeps all global columns. A split of image files
  decodes only these rows' images, each a training crop
  (:meth:`!jitr.data.image_files.ImageFiles.take`) seeded by its row of
  ``numpy.random.default_rng([seed, epoch, b, 1]).integers(2**63 - 1, size=batch_size)``:
  the same crops on one host as on several. ``buckets``: the token
  widths of :func:`make_batch`. ``augment(batch, rng)`` (training's augmentation,
  :class:`!jitr.data.train_augment.TrainAugment`) rewrites each global batch before its
  rows are taken, with ``rng = numpy.random.default_rng([seed, epoch, b])`` for batch
  ``b`` of the epoch. ``chunking.chunks`` > 1 (:mod:`!jitr.data.token_chunks`): each of
  the ``chunking.shards`` device blocks of a batch holds its pairs sorted by caption
  length, and the tokens come as that many chunks, each cut to its own bucket.
  """
  chunks, shards = chunking.chunks, chunking.shards
  files = is_image_files(split.images)
  pool = epoch_pool(split)
  order = pool[np.random.default_rng([seed, epoch]).permutation(len(pool))]
  for b in range(steps_per_epoch(split, batch_size)):
    captions = order[b * batch_size : (b + 1) * batch_size]
    if chunks > 1:
      captions = captions[length_sorted(split.lengths[captions], shards)]
    batch = make_batch(split, captions, buckets=buckets, pixels=not files)
    if augment is not None:
      batch = augment(batch, np.random.default_rng([seed, epoch, b]))
    if chunks > 1:
      batch = chunked_tokens(batch, chunks=chunks, shards=shards, buckets=buckets)
    out = {k: v[chunk_rows(rows, chunks) if is_token_chunk(k) else rows] for k, v in batch.items()}
    if files:
      seeds = np.random.default_rng([seed, epoch, b, 1]).integers(2**63 - 1, size=batch_size)
      out["images"] = split.images.take(out["images"], seeds[rows])
    yield out
