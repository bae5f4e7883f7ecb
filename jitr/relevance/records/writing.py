"""How relevance records are written: :class:`RecordsWriting`, the settings of
:func:`~jitr.relevance.records.write_relevance_records` besides what is estimated."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class RecordsWriting:
  """What the records keep, how they are sharded and shared between workers, and where the
  writer reports."""

  top_k: int | None = None
  """The K best captions kept per image; None: 100 for an estimator without per-caption
  vectors, none for one with them."""
  images_per_shard: int = 1024
  """Images per TFRecord shard."""
  num_workers: int = 1
  """Processes sharing the shards of the folder (``N >= 1``, one per ``worker_index``)."""
  worker_index: int = 0
  """This process's index in ``[0, N)``: it writes the shards ``s % N == i``."""
  log: Callable[[str], None] = print
  """Where the lines on each step (what was read, the fit, each shard) go."""
  progress: bool = False
  """One :class:`!jitr.progress.Progress` line on stderr: the images of this worker's
  shards still to write, done of their total, images per second and ETA."""

  @property
  def workers(self) -> tuple[int, int]:
    """``(worker_index, num_workers)``."""
    return self.worker_index, self.num_workers
