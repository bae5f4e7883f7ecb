"""One process of the two-process data-parallel stand-in for a pod run.

Run by ``tests/training/test_multiprocess.py`` as::

  python -m tests.training.multiprocess_worker --coordinator 127.0.0.1:PORT \
      --num-processes 2 --process-id P --local-devices 4 --out DIR --backends shard_map,pmap

Each process joins the job once and, for each of ``--backends`` in turn, builds the same
tiny state and trains ``--steps`` steps of ``DataParallel`` (that backend) with every loss
summed on fixed global batches, passing only its own rows of each batch to
``put_batch``. Process 0 writes the final parameters and the per-step losses to
``DIR/result-BACKEND.npz`` (:func:`result_name`).
"""

from __future__ import annotations

import argparse
import os
import sys

GLOBAL_BATCH = 16  # tiny.make_batch(n_images=8, captions_per_image=2)
STEPS = 3
LEARNING_RATE = 1e-2
BACKENDS = ("shard_map", "pmap")


def result_name(backend: str) -> str:
  return f"result-{backend}.npz"


def global_batches(steps: int = STEPS):
  from tests.training import tiny

  return [
    tiny.make_batch(seed=10 + s, n_images=GLOBAL_BATCH // 2, captions_per_image=2)
    for s in range(steps)
  ]


def train(dp, batches, rows: slice):
  """Trains from the tiny state on ``batches[k][rows]``; returns (flat params as numpy, losses)."""
  import jax
  import numpy as np
  import optax
  from flax import traverse_util

  from tests.training import tiny

  state = tiny.make_state(optax.adam(LEARNING_RATE))
  state = dp.put_state(state)
  losses = []
  for batch in batches:
    state, metrics = dp(state, dp.put_batch({k: np.asarray(v)[rows] for k, v in batch.items()}))
    losses.append(float(metrics["loss"]))
  # Replicated global arrays: each process holds a full copy on its own devices,
  # so np.asarray reads it without a cross-process gather.
  params = dp.get_state(state).params
  flat = traverse_util.flatten_dict(jax.tree.map(np.asarray, params), sep="/")
  return flat, np.asarray(losses, np.float64)


def make_parallel(training, tiny, backend: str):
  """Every loss of the registry summed (``tiny.EVERY_LOSS``), on all the job's devices."""
  step = training.make_train_step(
    tiny.EVERY_LOSS_FN, model=tiny.MODEL, graded_fn=tiny.graded_inputs_fn
  )
  return training.DataParallel(step, backend=backend)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--coordinator", required=True)
  parser.add_argument("--num-processes", type=int, required=True)
  parser.add_argument("--process-id", type=int, required=True)
  parser.add_argument("--local-devices", type=int, default=4)
  parser.add_argument("--steps", type=int, default=STEPS)
  parser.add_argument("--out", required=True)
  parser.add_argument("--backends", default="shard_map", help="comma-separated, in order")
  args = parser.parse_args(argv)
  backends = args.backends.split(",")
  if not set(backends) <= set(BACKENDS):
    parser.error(f"--backends: expected a comma-separated subset of {BACKENDS}, got {backends}")

  from jitr.training import distributed

  distributed.initialize(
    args.coordinator,
    args.num_processes,
    args.process_id,
    local_device_count=args.local_devices,
    initialization_timeout_s=120,
  )

  import jax
  import numpy as np

  from jitr import training
  from tests.training import tiny

  n = args.num_processes * args.local_devices
  assert jax.process_count() == args.num_processes, jax.process_count()
  assert jax.process_index() == args.process_id, jax.process_index()
  assert jax.device_count() == n and jax.local_device_count() == args.local_devices, jax.devices()
  # DataParallel's mesh follows jax.devices(); process p's devices must hold rows [p·b, (p+1)·b).
  owners = [d.process_index for d in jax.devices()]
  assert owners == sorted(owners), owners

  rows = distributed.process_batch_slice(GLOBAL_BATCH)
  for backend in backends:
    dp = make_parallel(training, tiny, backend)
    flat, losses = train(dp, global_batches(args.steps), rows)
    if jax.process_index() == 0:
      path = os.path.join(args.out, result_name(backend))
      np.savez(path + ".tmp.npz", losses=losses, **{f"params/{k}": v for k, v in flat.items()})
      os.replace(path + ".tmp.npz", path)
    print(
      f"process {args.process_id} ({backend}): rows {rows.start}:{rows.stop}, "
      f"losses {losses.tolist()}",
      flush=True,
    )
  return 0


if __name__ == "__main__":
  sys.exit(main())
