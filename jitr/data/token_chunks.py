"""A training batch's captions in length-sorted chunks, each padded to its own width.

A batch padded to its longest caption makes a transformer text tower (VSE∞'s BERT) run
on every caption at that width: on jitr_shapes the captions hold 13.5 WordPiece ids on
average, but a batch of 128 is cut to the bucket of its longest (1% hold over 32 ids),
so the BERT runs on 42.3 ids a caption. With ``config.token_chunks = k``:

1. :func:`length_sorted` orders the batch's pairs, within each device's block of
   ``m = B / shards`` rows, by caption length (stable). Every pair keeps its image and
   its relevance data (the batch is built from the reordered caption indices), and every
   loss is a function of the set of pairs, so the objective is unchanged.
2. :func:`chunked_tokens` replaces ``tokens [B, L]`` by ``k`` arrays
   ``token_chunks/c [B/k, L_c]``: chunk ``c`` holds rows ``c·m/k … (c+1)·m/k − 1`` of each
   device's block (device-major, so a device's rows of chunk ``c`` are its own rows), cut
   to the smallest of the buckets that holds the chunk's longest caption over all
   blocks. Sorted, the short chunks are cut short: the mean width falls to 27.7 ids with
   2 chunks, 21.4 with 4 (jitr_shapes' lengths, batches of 128).
3. The train step (:func:`joined_token_chunks`) gives the network ``tokens`` as the tuple
   of chunks; a network that encodes each caption alone (VSE++, VSE∞) encodes each chunk
   and concatenates the rows, which are the rows of the batch in order.

Each distinct tuple of chunk widths compiles the train step once, and a step of ``k``
chunks holds ``k`` text encoders, so it compiles longer: jitr_shapes' first epoch meets 4
tuples with 2 chunks and 12 with 4 (``scripts/bench_token_chunks.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from jitr.data import vocab as vocab_lib
from jitr.data.batch_keys import TOKEN_CHUNKS, token_chunk_key


def length_sorted(lengths: np.ndarray, shards: int) -> np.ndarray:
  """The permutation ``p`` of ``B`` rows that sorts each block of ``B / shards`` contiguous
  rows by ``lengths`` (stable), keeping every row in its block: ``rows[p]``."""
  blocks = np.asarray(lengths).reshape(shards, -1)
  order = np.argsort(blocks, axis=1, kind="stable")
  return (order + blocks.shape[1] * np.arange(shards)[:, None]).reshape(-1)


def chunked_tokens(
  batch: Mapping[str, np.ndarray], *, chunks: int, shards: int, buckets: Sequence[int]
) -> dict[str, np.ndarray]:
  """``batch`` with ``tokens [B, L]`` replaced by ``chunks`` arrays
  ``token_chunks/c [B/chunks, L_c]`` (module docstring): chunk ``c`` holds rows
  ``c·m/k … (c+1)·m/k − 1`` of each of the ``shards`` blocks of ``m = B / shards`` rows, in
  block order, cut to the smallest of ``buckets`` holding its longest caption
  (``buckets=()``: the batch's width ``L``). ``lengths`` stays ``[B]`` in row order."""
  tokens, lengths = batch["tokens"], np.asarray(batch["lengths"])
  rows = len(lengths)
  check_chunk_split(rows, shards, chunks)
  size = rows // (shards * chunks)
  # [shards, chunks, size]: the row indices of each device's chunk.
  index = np.arange(rows).reshape(shards, chunks, size)
  out = {k: v for k, v in batch.items() if k != "tokens"}
  for c in range(chunks):
    members = index[:, c].reshape(-1)
    width = vocab_lib.bucket_length(lengths[members], buckets) if len(buckets) else None
    out[token_chunk_key(c)] = tokens[members, :width]
  return out


def check_chunk_split(batch_size: int, shards: int, chunks: int) -> None:
  """Raises ``ValueError`` (one line) unless each of ``shards`` devices' rows of a batch
  of ``batch_size`` split into ``chunks`` chunks of equal size."""
  if batch_size % (shards * chunks):
    raise ValueError(
      f"config.token_chunks: a batch of {batch_size} pairs over {shards} devices does not "
      f"split into {chunks} chunks per device; use a batch_size divisible by {shards * chunks}"
    )


def chunk_rows(rows: slice, chunks: int) -> slice:
  """A process's rows of a chunk array, given its ``rows`` of the batch (contiguous device
  blocks, the :func:`jitr.training.distributed.process_batch_slice` of the batch)."""
  start = None if rows.start is None else rows.start // chunks
  stop = None if rows.stop is None else rows.stop // chunks
  return slice(start, stop)


def is_token_chunk(key: str) -> bool:
  """Whether ``key`` is a ``token_chunks/c`` key of :func:`chunked_tokens`."""
  return key.startswith(TOKEN_CHUNKS + "/")


def joined_token_chunks(batch: Mapping) -> dict:
  """A device's batch with its ``token_chunks/c`` arrays gathered, in chunk order, into
  the tuple ``tokens`` (what a network that takes chunks reads); a batch without chunks
  is returned as it is."""
  keys = sorted((k for k in batch if is_token_chunk(k)), key=lambda k: int(k.split("/")[-1]))
  if not keys:
    return dict(batch)
  out = {k: v for k, v in batch.items() if not is_token_chunk(k)}
  out["tokens"] = tuple(batch[k] for k in keys)
  return out
