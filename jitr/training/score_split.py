"""The similarity matrix of a whole split, streamed: encode once, score pair blocks.

Works for both kinds of :class:`~jitr.models.retrieval_model.RetrievalModel`
(duck-typed: ``pairwise``, ``encode_images``, ``encode_captions``, ``score``):

1. every image and caption is encoded once (captions twice for a model that completes
   their concept labels from the first encoding: CVSE), in fixed-size batches
   (:func:`jitr.training.embed.encode_in_batches`), into device-resident
   representations (embeddings ``[N, E]``, or any pytree with rows first, e.g.
   SGRAF's ``(regions, mask)`` / ``(words, mask)``);
2. ``sim[i, c]`` is filled ``image_batch x caption_batch`` blocks at a time by one
   jitted block scorer that slices its block out of the representations on device:
   ``score(variables, images[block], captions[block], train=False)`` for pairwise
   (similarity) models, ``images[block] @ captions[block].T`` for embedding models (or the
   model's ``eval_similarity`` of the two, CVSE's mix of two embeddings).
   Nothing but the block's ``sim`` leaves the scorer, so the memory of a pairwise
   model's activations is that of one block (the model may block further inside).

Each block has the same shape (the last block of an axis starts early, overlapping
its predecessor, and only its new rows / columns are written), so the scorer
compiles once per split shape. The result is a float32 numpy matrix.

``official=True`` asks for the matrix the official evaluation computes: for a model with an
``eval_similarity`` (CVSE, whose official ``evalrank`` stores the float32 embeddings in
float64 arrays and scores them in float64), step 2 runs on the host in float64 over the
same representations, ``image_batch`` image rows at a time, and the result is float64;
any other model's matrix is the float32 one (the official protocol casts it).

With ``show_progress``, a split of at least :data:`MIN_PAIRS_SHOWN` pairs draws one
:class:`jitr.progress.Progress` line on stderr (process 0 only): pairs scored of
``N_img x N_cap``, pairs per second, ETA; a pair counts once its block is copied off the
device, and the clock starts before the encoding, whose time lands in the first blocks.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jitr.data import pairs
from jitr.models.retrieval_model import INPUTS
from jitr.progress import Progress
from jitr.training.embed import caption_inputs, encode_in_batches, image_inputs

# A split of fewer (image, caption) pairs is scored without a progress line (too quick to watch).
MIN_PAIRS_SHOWN = 1_000_000


def _rows(tree: Any, start: jax.Array, size: int) -> Any:
  return jax.tree.map(lambda x: jax.lax.dynamic_slice_in_dim(x, start, size), tree)


def _dot(images: jax.Array, captions: jax.Array) -> jax.Array:
  return jnp.einsum("ie,ce->ic", images.astype(jnp.float32), captions.astype(jnp.float32))


def block_starts(n: int, block: int) -> list[tuple[int, int]]:
  """``[(start, first_new_row)]`` of the blocks of ``block`` rows covering ``n`` rows: block k
  starts at ``min(k * block, n - block)`` and contributes rows from ``k * block`` on."""
  return [(min(lo, n - block), lo) for lo in range(0, n, block)]


class SplitScorer:
  """``scorer(variables, split) -> sim [N_img, N_cap]`` (float32 numpy) for one model.

  Holds the jitted encoders and block scorer, so calling it every validation epoch
  compiles nothing new. ``image_batch`` / ``caption_batch`` size both the encoding
  batches and the scored blocks; ``show_progress`` draws the progress line of the module
  docstring.
  """

  def __init__(
    self, model: Any, *, image_batch: int, caption_batch: int, show_progress: bool = False
  ):
    for name, v in (("image_batch", image_batch), ("caption_batch", caption_batch)):
      if v < 1:
        raise ValueError(f"SplitScorer: {name} must be >= 1, got {v}")
    self.image_batch, self.caption_batch = image_batch, caption_batch
    self.show_progress = show_progress
    self.encode_images = jax.jit(model.encode_images)
    self.encode_captions = jax.jit(model.encode_captions)
    self.complete_caption_labels = getattr(model, "complete_caption_labels", None)
    self.inputs = getattr(model, "inputs", INPUTS)
    self.eval_similarity = getattr(model, "eval_similarity", None)
    if model.pairwise:

      def pair_scores(variables, images, captions):
        sim, _ = model.score(variables, images, captions, train=False, rngs=None, axis_name=None)
        return sim

    elif self.eval_similarity is not None:
      pair_scores = lambda variables, images, captions: self.eval_similarity(images, captions)
    else:
      pair_scores = lambda variables, images, captions: _dot(images, captions)

    @functools.partial(jax.jit, static_argnames=("rows", "cols"))
    def score_block(variables, images, captions, i0, c0, *, rows, cols):
      sim = pair_scores(variables, _rows(images, i0, rows), _rows(captions, c0, cols))
      return sim.astype(jnp.float32)

    self.score_block = score_block

  def __call__(
    self,
    variables: Any,
    split: pairs.RetrievalSplit,
    *,
    label: str = "scoring",
    official: bool = False,
  ) -> np.ndarray:
    """``sim [N_img, N_cap]`` of ``split``; ``label`` starts the progress line;
    ``official``: the official evaluation's matrix (module docstring: float64 for a model
    with an ``eval_similarity``)."""
    n_img, n_cap = split.num_images, split.num_captions
    with Progress(
      n_img * n_cap,
      "pairs",
      label=label,
      enabled=self.show_progress and jax.process_index() == 0,
      min_total=MIN_PAIRS_SHOWN,
    ) as progress:
      if official and self.eval_similarity is not None:
        return self._score_on_host(variables, split, progress)
      return self._score(variables, split, progress)

  def _encoded(self, variables: Any, split: pairs.RetrievalSplit) -> tuple[Any, Any]:
    """``(images, captions)``: the split's representations (module docstring, step 1)."""
    images = encode_in_batches(
      self.encode_images, variables, image_inputs(split, self.inputs), batch_size=self.image_batch
    )
    return images, self._captions(variables, split, images)

  def _score_on_host(
    self, variables: Any, split: pairs.RetrievalSplit, progress: Progress
  ) -> np.ndarray:
    """float64 ``sim``: ``eval_similarity`` of the representations as float64 numpy
    arrays, ``image_batch`` image rows at a time."""
    images, captions = (np.asarray(x, np.float64) for x in self._encoded(variables, split))
    sim = np.empty((split.num_images, split.num_captions), np.float64)
    for start in range(0, split.num_images, self.image_batch):
      stop = min(start + self.image_batch, split.num_images)
      sim[start:stop] = self.eval_similarity(images[start:stop], captions)
      progress.advance((stop - start) * split.num_captions)
    return sim

  def _captions(self, variables: Any, split: pairs.RetrievalSplit, images: Any) -> Any:
    """The captions' representations (with the per-row inputs the model declares);
    with labels and a model that completes them (``complete_caption_labels``), the
    second encoding with the completed labels."""
    inputs = caption_inputs(split, self.inputs)

    def encode(arrays):
      return encode_in_batches(
        self.encode_captions, variables, arrays, batch_size=self.caption_batch
      )

    captions = encode(inputs)
    if len(inputs) == 3 and self.complete_caption_labels is not None:
      labels = self.complete_caption_labels(np.asarray(images), np.asarray(captions), inputs[2])
      captions = encode((*inputs[:2], labels))
    return captions

  def _score(self, variables: Any, split: pairs.RetrievalSplit, progress: Progress) -> np.ndarray:
    images, captions = self._encoded(variables, split)
    n_img, n_cap = split.num_images, split.num_captions
    rows, cols = min(self.image_batch, n_img), min(self.caption_batch, n_cap)
    sim = np.empty((n_img, n_cap), np.float32)
    pending = None  # the previous block, copied out after the next one is dispatched

    def write(block):
      (i0, i_new), (c0, c_new), values = block
      sim[i_new : i0 + rows, c_new : c0 + cols] = np.asarray(values)[i_new - i0 :, c_new - c0 :]
      progress.advance((i0 + rows - i_new) * (c0 + cols - c_new))

    for i in block_starts(n_img, rows):
      for c in block_starts(n_cap, cols):
        values = self.score_block(
          variables, images, captions, np.int32(i[0]), np.int32(c[0]), rows=rows, cols=cols
        )
        if pending is not None:
          write(pending)
        pending = (i, c, values)
    if pending is not None:
      write(pending)
    return sim


def score_split(
  model: Any, variables: Any, split: pairs.RetrievalSplit, *, image_batch: int, caption_batch: int
) -> np.ndarray:
  """``sim [N_img, N_cap]`` (float32) of every image against every caption of ``split`` under
  ``model`` (a ``RetrievalModel``) and ``variables`` (``{"params": ..., ...}``), streamed
  in ``image_batch x caption_batch`` blocks (see the module docstring). For repeated calls
  keep a :class:`SplitScorer`."""
  scorer = SplitScorer(model, image_batch=image_batch, caption_batch=caption_batch)
  return scorer(variables, split)
