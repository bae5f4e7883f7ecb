"""Sharding of relevance records: which images go to which shard, the shard files' names,
and which worker writes which shard.

Shard ``s`` of ``N`` holds images ``[s * P, min((s + 1) * P, num_images))`` (``P`` images
per shard) and is written to ``relevance-SSSSS-of-NNNNN.tfrecord``; its manifest is the
same name with ``.json`` appended. Worker ``i`` of ``W`` writes the shards ``s % W == i``.
"""

from __future__ import annotations

SHARD_PATTERN = "relevance-{index:05d}-of-{count:05d}.tfrecord"
MANIFEST_SUFFIX = ".json"


def shard_name(index: int, count: int) -> str:
  """The file name of shard ``index`` of ``count``.

  >>> shard_name(2, 8)
  'relevance-00002-of-00008.tfrecord'
  """
  return SHARD_PATTERN.format(index=index, count=count)


def manifest_name(index: int, count: int) -> str:
  """The completion record of shard ``index``: ``relevance-SSSSS-of-NNNNN.tfrecord.json``."""
  return shard_name(index, count) + MANIFEST_SUFFIX


def check_images_per_shard(images_per_shard: int) -> None:
  """Raise ``ValueError`` naming the setting unless it is a whole number ``>= 1``."""
  if isinstance(images_per_shard, bool) or not isinstance(images_per_shard, int):
    raise ValueError(f"images_per_shard={images_per_shard!r}: expected a whole number >= 1")
  if images_per_shard < 1:
    raise ValueError(f"images_per_shard={images_per_shard}: expected a whole number >= 1")


def shard_count(num_images: int, images_per_shard: int) -> int:
  """How many shards hold ``num_images`` images (at least one).

  >>> shard_count(5, 2), shard_count(4, 2), shard_count(0, 2)
  (3, 2, 1)
  """
  return max(1, -(-num_images // images_per_shard))


def shard_bounds(index: int, images_per_shard: int, num_images: int) -> tuple[int, int]:
  """The images ``[lo, hi)`` of shard ``index``.

  >>> shard_bounds(2, 2, 5)
  (4, 5)
  """
  return index * images_per_shard, min((index + 1) * images_per_shard, num_images)


def check_worker(num_workers: int, worker_index: int) -> None:
  """Raise ``ValueError`` naming the setting unless ``0 <= worker_index < num_workers``."""
  if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
    raise ValueError(f"num_workers={num_workers!r}: expected a whole number of workers >= 1")
  if isinstance(worker_index, bool) or not isinstance(worker_index, int):
    raise ValueError(f"worker_index={worker_index!r}: expected a whole number")
  if not 0 <= worker_index < num_workers:
    raise ValueError(
      f"worker_index={worker_index} is outside [0, num_workers={num_workers}): "
      f"expected one of 0..{num_workers - 1}"
    )


def worker_shards(num_shards: int, num_workers: int = 1, worker_index: int = 0) -> list[int]:
  """The shards worker ``i`` of ``N`` writes: ``s`` in ``[0, num_shards)`` with ``s % N == i``.

  Round robin, so neighbouring shards (similar cost) go to different workers and
  every worker count splits the same shards (a run may resume with another ``N``).
  """
  check_worker(num_workers, worker_index)
  return list(range(worker_index, num_shards, num_workers))
