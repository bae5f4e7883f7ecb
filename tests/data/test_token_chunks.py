"""Length-sorted caption chunks (``config.token_chunks``): the host's sort and cut, worked
by hand, and what ``epoch_batches`` gives with them (the same pairs, each device's rows
sorted, each chunk cut to its bucket, a process's rows of each chunk)."""

import numpy as np
import pytest

from jitr.data import pairs
from jitr.data.token_chunks import (
  check_chunk_split,
  chunk_rows,
  chunked_tokens,
  joined_token_chunks,
  length_sorted,
)


def test_length_sorted_sorts_each_device_block_stably_by_hand():
  # blocks [5, 2, 9, 1] and [3, 3, 1, 7]: ties keep their order
  p = length_sorted(np.array([5, 2, 9, 1, 3, 3, 1, 7]), shards=2)
  assert p.tolist() == [3, 1, 0, 2, 6, 4, 5, 7]
  assert length_sorted(np.array([5, 2, 9, 1, 3, 3, 1, 7]), shards=1).tolist() == [
    3,
    6,
    1,
    4,
    5,
    0,
    7,
    2,
  ]


def _tokens(lengths, width):
  """Row ``i`` holds ids ``10·i + 1 … 10·i + n`` then padding 0."""
  lengths = np.asarray(lengths)
  ids = 10 * np.arange(len(lengths))[:, None] + 1 + np.arange(width)[None]
  return np.where(np.arange(width)[None] < lengths[:, None], ids, 0)


def test_chunked_tokens_cuts_each_chunk_of_each_device_to_its_bucket_by_hand():
  # 2 devices of 4 rows, each sorted; 2 chunks per device: rows {0,1,4,5} and {2,3,6,7}
  lengths = np.array([1, 2, 3, 6, 2, 3, 3, 4])
  batch = {"tokens": _tokens(lengths, 8), "lengths": lengths, "image_ids": np.arange(8)}
  out = chunked_tokens(batch, chunks=2, shards=2, buckets=(2, 4, 8))
  assert sorted(out) == ["image_ids", "lengths", "token_chunks/0", "token_chunks/1"]
  # chunk 0: rows 0, 1 (device 0) then 4, 5 (device 1); longest 3 -> bucket 4
  np.testing.assert_array_equal(out["token_chunks/0"], batch["tokens"][[0, 1, 4, 5], :4])
  # chunk 1: rows 2, 3, 6, 7; longest 6 -> bucket 8
  np.testing.assert_array_equal(out["token_chunks/1"], batch["tokens"][[2, 3, 6, 7], :8])
  np.testing.assert_array_equal(out["lengths"], lengths)  # row order kept
  # no buckets: every chunk keeps the batch's width
  plain = chunked_tokens(batch, chunks=4, shards=1, buckets=())
  assert [plain[f"token_chunks/{c}"].shape for c in range(4)] == [(2, 8)] * 4
  np.testing.assert_array_equal(plain["token_chunks/3"], batch["tokens"][6:8])


def test_a_batch_that_does_not_split_into_the_chunks_is_one_line():
  with pytest.raises(ValueError) as err:
    check_chunk_split(12, 2, 4)
  assert str(err.value) == (
    "config.token_chunks: a batch of 12 pairs over 2 devices does not split into 4 chunks "
    "per device; use a batch_size divisible by 8"
  )
  check_chunk_split(16, 2, 4)  # divisible: nothing raised


def test_chunk_rows_of_a_process_and_joined_chunks():
  assert chunk_rows(slice(None), 4) == slice(None, None)
  assert chunk_rows(slice(16, 32), 4) == slice(4, 8)
  chunks = {f"token_chunks/{c}": np.full((1, c + 1), c) for c in range(12)}
  joined = joined_token_chunks({**chunks, "lengths": np.ones(12)})
  assert sorted(joined) == ["lengths", "tokens"]
  assert [t[0, 0] for t in joined["tokens"]] == list(range(12))  # 10 after 9, not after 1
  plain = {"tokens": np.ones((2, 3)), "lengths": np.ones(2)}
  assert joined_token_chunks(plain).keys() == plain.keys()


def _split():
  rng = np.random.default_rng(0)
  n_img, per = 16, 2
  lengths = rng.integers(2, 20, n_img * per).astype(np.int32)
  return pairs.RetrievalSplit(
    images=rng.normal(size=(n_img, 3, 2)).astype(np.float32),
    image_mask=None,
    tokens=_tokens(lengths, 24).astype(np.int32),
    lengths=lengths,
    caption_image=np.repeat(np.arange(n_img), per),
    vectors={},
    topk={},
    oracle=lambda i, c: (i[:, None] == (c[None, :] // 2)).astype(np.float32),
  )


def test_epoch_batches_in_chunks_hold_the_same_pairs_sorted_per_device():
  split = _split()
  kw = dict(batch_size=16, seed=3, epoch=1, buckets=(4, 8, 16))
  plain = list(pairs.epoch_batches(split, **kw))
  chunked = list(pairs.epoch_batches(split, **kw, chunking=pairs.TokenChunking(2, shards=2)))
  assert len(plain) == len(chunked) == 2
  for p, c in zip(plain, chunked):
    assert "tokens" not in c
    assert sorted(p["caption_indices"]) == sorted(c["caption_indices"])
    # each device's 8 rows are the plain batch's 8 rows, sorted by caption length
    for d in range(2):
      rows = slice(8 * d, 8 * d + 8)
      assert sorted(p["caption_indices"][rows]) == sorted(c["caption_indices"][rows])
      assert (np.diff(c["lengths"][rows]) >= 0).all()
    # every row is its caption's pair: image, length, relevance against the batch
    captions = c["caption_indices"]
    np.testing.assert_array_equal(c["image_ids"], split.caption_image[captions])
    np.testing.assert_array_equal(c["lengths"], split.lengths[captions])
    np.testing.assert_array_equal(
      c["oracle_relevance"], split.oracle(split.caption_image[captions], captions)
    )
    # chunk k of device d: rows 4k .. 4k+3 of its block, cut to the chunk's bucket
    for k in range(2):
      members = np.concatenate([8 * d + 4 * k + np.arange(4) for d in range(2)])
      longest = split.lengths[captions[members]].max()
      width = min([b for b in (4, 8, 16) if b >= longest] or [longest])  # beyond: its own
      np.testing.assert_array_equal(c[f"token_chunks/{k}"], split.tokens[captions[members], :width])
  # a process's rows: its half of every chunk, the rest of its rows as before
  second = list(
    pairs.epoch_batches(split, **kw, chunking=pairs.TokenChunking(2, shards=2), rows=slice(8, 16))
  )
  for whole, part in zip(chunked, second):
    np.testing.assert_array_equal(part["caption_indices"], whole["caption_indices"][8:])
    for k in range(2):
      np.testing.assert_array_equal(part[f"token_chunks/{k}"], whole[f"token_chunks/{k}"][4:])
