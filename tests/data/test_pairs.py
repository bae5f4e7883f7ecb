import numpy as np
import pytest

from jitr.data import pairs


def _split(**kw):
  rng = np.random.default_rng(0)
  n_img, per = 6, 2
  lengths = rng.integers(2, 10, n_img * per).astype(np.int32)
  tokens = np.where(np.arange(20)[None] < lengths[:, None], 5, 0).astype(np.int32)
  vec = rng.normal(size=(n_img * per, 3)).astype(np.float32)
  return pairs.RetrievalSplit(
    images=rng.normal(size=(n_img, 4, 2)).astype(np.float32),
    image_mask=np.ones((n_img, 4), bool),
    tokens=tokens,
    lengths=lengths,
    caption_image=np.repeat(np.arange(n_img), per),
    vectors={"sentence": vec},
    topk={"cider": (np.tile(np.arange(3), (n_img, 1)), np.ones((n_img, 3), np.float32))},
    oracle=lambda i, c: (i[:, None] == (c[None, :] // 2)).astype(np.float32),
    **kw,
  )


def test_batches_are_deterministic_per_epoch_and_cover_pairs():
  split = _split()
  a = list(pairs.epoch_batches(split, batch_size=4, seed=1, epoch=0))
  b = list(pairs.epoch_batches(split, batch_size=4, seed=1, epoch=0))
  c = list(pairs.epoch_batches(split, batch_size=4, seed=1, epoch=1))
  assert len(a) == pairs.steps_per_epoch(split, 4) == 3
  for x, y in zip(a, b):
    for k in x:
      np.testing.assert_array_equal(x[k], y[k])
  assert not all(np.array_equal(x["caption_indices"], y["caption_indices"]) for x, y in zip(a, c))
  seen = np.concatenate([x["caption_indices"] for x in a])
  assert sorted(seen) == list(range(12))


def test_batch_fields_by_hand():
  split = _split()
  batch = pairs.make_batch(split, np.array([3, 0, 7]))
  np.testing.assert_array_equal(batch["image_ids"], [1, 0, 3])
  np.testing.assert_array_equal(batch["images"], split.images[[1, 0, 3]])
  assert batch["tokens"].shape[1] == min(
    b for b in (8, 12, 16) if b >= batch["lengths"].max()
  )  # bucket
  assert batch["tokens"].shape[1] >= batch["lengths"].max()
  np.testing.assert_array_equal(
    batch["vectors/sentence/captions"], split.vectors["sentence"][[3, 0, 7]]
  )
  np.testing.assert_array_equal(
    batch["vectors/sentence/references"][0], split.vectors["sentence"][[2, 3]]
  )
  assert batch["topk/cider/indices"].shape == (3, 3)
  np.testing.assert_array_equal(batch["oracle_relevance"], [[1, 0, 0], [0, 1, 0], [0, 0, 1]])


def test_token_buckets_set_each_batch_width():
  split = _split()  # caption lengths 2..9
  batches = [list(pairs.epoch_batches(split, batch_size=4, seed=1, epoch=e)) for e in range(3)]
  for batch in (b for epoch in batches for b in epoch):
    longest = int(batch["lengths"].max())
    width = pairs.batch_width(split, batch["caption_indices"], pairs.TOKEN_BUCKETS)
    assert width == (8 if longest <= 8 else 12) == batch["tokens"].shape[1]
    # beyond the last bucket: the batch's longest caption
    assert pairs.batch_width(split, batch["caption_indices"], (1,)) == longest
  # no buckets: every batch is cut to the split's longest caption, the same width throughout
  one = [
    b
    for e in range(3)
    for b in pairs.epoch_batches(split, batch_size=4, seed=1, epoch=e, buckets=())
  ]
  assert {b["tokens"].shape[1] for b in one} == {int(split.lengths.max())}
  for cut, full in zip(one, (b for epoch in batches for b in epoch)):
    np.testing.assert_array_equal(cut["caption_indices"], full["caption_indices"])
    # the same tokens; the wider of the two has only padding (zeros) beyond the other
    width = min(cut["tokens"].shape[1], full["tokens"].shape[1])
    np.testing.assert_array_equal(cut["tokens"][:, :width], full["tokens"][:, :width])
    assert not cut["tokens"][:, width:].any() and not full["tokens"][:, width:].any()


def test_rows_select_this_hosts_share():
  split = _split()
  full = next(pairs.epoch_batches(split, batch_size=4, seed=0, epoch=0))
  half = next(pairs.epoch_batches(split, batch_size=4, seed=0, epoch=0, rows=slice(2, 4)))
  np.testing.assert_array_equal(half["caption_indices"], full["caption_indices"][2:])
  assert half["oracle_relevance"].shape == (2, 4)  # rows of this host, every global column


def test_inconsistent_splits_are_refused():
  with pytest.raises(ValueError, match="tokens"):
    pairs.RetrievalSplit(
      images=np.zeros((2, 1)),
      tokens=np.zeros((3, 2)),
      lengths=np.ones(4),
      caption_image=np.array([0, 0, 1, 1]),
    )
  with pytest.raises(ValueError, match="same number of captions"):
    pairs.RetrievalSplit(
      images=np.zeros((2, 1)),
      tokens=np.zeros((3, 2)),
      lengths=np.ones(3),
      caption_image=np.array([0, 0, 1]),
    )
  with pytest.raises(ValueError, match="larger than"):
    pairs.steps_per_epoch(_split(), 100)


def test_a_training_subset_draws_whole_images_and_keeps_the_arrays():
  split = _split()
  sub = pairs.training_subset(split, 0.5)  # ⌊0.5 · 6⌋ = 3 images, their 6 captions
  images = set(sub.caption_image[sub.epoch_captions].tolist())
  assert len(images) == 3 and len(sub.epoch_captions) == 6
  assert all(
    set(np.flatnonzero(split.caption_image == i)) <= set(sub.epoch_captions) for i in images
  )
  assert sub.images is split.images and sub.topk is split.topk  # indices stay global
  batches = list(pairs.epoch_batches(sub, batch_size=4, seed=1, epoch=0))
  assert len(batches) == pairs.steps_per_epoch(sub, 4) == 1
  assert set(batches[0]["caption_indices"].tolist()) <= set(sub.epoch_captions.tolist())
  # the same images whatever the seed or epoch; all of them at 1.0: the batches as before
  assert pairs.training_subset(split, 1.0) is split
  np.testing.assert_array_equal(
    pairs.training_subset(_split(), 0.5).epoch_captions, sub.epoch_captions
  )
  with pytest.raises(ValueError, match=r"config.train_fraction: 0.1 of the 6 training images"):
    pairs.training_subset(split, 0.1)
  with pytest.raises(ValueError, match=r"larger than the split's 6 captions kept for training"):
    pairs.steps_per_epoch(sub, 8)


@pytest.mark.parametrize(
  ("images", "fraction", "count"),
  [(29_000, 0.1, 2_900), (29_000, 0.25, 7_250), (113_287, 0.03, 3_398), (113_287, 0.05, 5_664)],
)
def test_sams_reduced_training_sets_have_the_papers_sizes(images, fraction, count):
  split = pairs.RetrievalSplit(
    np.zeros((images, 1, 1), np.float32),
    None,
    None,
    np.arange(images),
    text_vectors=np.zeros((images, 1), np.float32),
  )
  assert len(pairs.training_subset(split, fraction).epoch_captions) == count
