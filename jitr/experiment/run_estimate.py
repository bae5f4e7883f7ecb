"""What one jitr-train run will cost, measured on this machine before it starts: the
seconds of a train step, the run's training time and the disk of its checkpoints.

The run's data is loaded as jitr-train loads it (:func:`jitr.experiment.load_data`), its
network and optimizer built (:func:`initial_state`) and its data-parallel step compiled
and run on the epoch's first batches until ``steps`` of them ran an already compiled
step (a batch of new token widths compiles it again, and is not counted). The step is
the network's with the max-violation triplet alone (``config.graded`` left out: the
graded losses read relevance records that the run precomputes first; at a batch of 128
they cost little beside the encoders), so the estimate leaves out the relevance
precompute and the validations.

* training time ``T = t_step × steps_per_epoch × num_epochs``, ``t_step`` the median of
  the measured steps (compiles left out: ``compile_s`` is the mean time a compiling
  step took beyond ``t_step``);
* checkpoint disk ``D = 3 × B``: jitr-train keeps the two newest epoch saves and the best
  one (:class:`jitr.training.Checkpoints`), ``B`` the bytes of one saved train state
  (parameters, optimizer state, batch statistics).
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
import time

import jax
import ml_collections

from jitr.data import pairs
from jitr.experiment.loaded_data import load_data
from jitr.experiment.model_state import initial_state
from jitr.experiment.run_concepts import dataset_constants
from jitr.experiment.run_config import resolved_config
from jitr.experiment.train import data_parallel_step, train_augment

# checkpoints on disk at once: the two newest epoch saves and the best
SAVES_KEPT = 3
TRIPLET_ALONE = {"triplet": {"weight": 1.0, "margin": 0.2, "mining": "max"}}
# The batches tried per measured step: a batch whose token widths are new compiles the
# step (config.token_buckets, config.token_chunks) and is not measured.
COMPILE_ALLOWANCE = 4


@dataclasses.dataclass(frozen=True)
class RunEstimate:
  """A run's measured step (``step_s`` seconds, median of the measured steps), its
  ``steps`` (per epoch × epochs), training time ``train_s`` and checkpoint disk
  ``checkpoint_bytes`` (:data:`SAVES_KEPT` saves of ``state_bytes``), on ``device``."""

  step_s: float
  steps: int
  train_s: float
  state_bytes: int
  checkpoint_bytes: int
  device: str
  compile_s: float
  """The mean seconds a step that compiled took beyond ``step_s`` (one per distinct
  batch shape: token buckets, chunk widths)."""


def batch_shapes(batch: dict) -> tuple:
  """The shapes of a host batch's arrays, by key: the step compiles once per value."""
  return tuple(sorted((k, tuple(v.shape)) for k, v in batch.items()))


def step_config(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """``config`` with the triplet alone as its loss and no graded inputs (see above)."""
  out = resolved_config(config)
  with out.unlocked():
    out.graded = ml_collections.ConfigDict({})
    out.loss = ml_collections.ConfigDict(TRIPLET_ALONE)
  return out


def estimate_run(config: ml_collections.ConfigDict, *, steps: int = 3) -> RunEstimate:
  """Measures ``config``'s run on this machine (module docstring)."""
  config = step_config(config)
  data = load_data(config, config.data_dir, teachers=False)
  train = pairs.training_subset(data.splits["train"], config.train_fraction)
  steps_per_epoch = pairs.steps_per_epoch(train, config.batch_size)
  constants = dataset_constants(data.concepts)
  model, state = initial_state(config, len(data.vocab), train, steps_per_epoch, constants)
  state_bytes = sum(int(leaf.nbytes) for leaf in jax.tree.leaves(state) if hasattr(leaf, "nbytes"))
  parallel = data_parallel_step(config, model, data.aggregates, steps_per_epoch)
  state = parallel.put_state(state)
  batches = pairs.epoch_batches(  # the batches jitr-train's first epoch starts with
    train,
    batch_size=config.batch_size,
    seed=config.seed,
    epoch=0,
    buckets=tuple(config.token_buckets),
    chunking=pairs.TokenChunking(config.token_chunks, shards=parallel.num_devices),
    augment=train_augment(config, data),
  )
  times, compiling, compiled = [], [], set()
  for batch in itertools.islice(batches, COMPILE_ALLOWANCE * (steps + 1)):
    shapes = batch_shapes(batch)  # a shape not seen before compiles the step
    start = time.perf_counter()
    state, metrics = parallel(state, parallel.put_batch(batch))
    jax.block_until_ready(metrics["loss"])
    (times if shapes in compiled else compiling).append(time.perf_counter() - start)
    compiled.add(shapes)
    if len(times) == steps:
      break
  step_s = statistics.median(times or compiling)  # every batch compiled: its own shapes
  compile_s = max(statistics.mean(compiling) - step_s, 0.0)
  total = steps_per_epoch * config.num_epochs
  device = jax.devices()[0]
  return RunEstimate(
    step_s=step_s,
    steps=total,
    train_s=step_s * total,
    state_bytes=state_bytes,
    checkpoint_bytes=SAVES_KEPT * state_bytes,
    device=f"{jax.device_count()} × {getattr(device, 'device_kind', device.platform)}",
    compile_s=compile_s,
  )
