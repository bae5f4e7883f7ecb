#!/usr/bin/env python
"""Benchmark: a run's train step with its captions in length-sorted chunks
(``config.token_chunks``) beside the batch at one width, on the run's own batches.

For each chunk count of ``--chunks`` (the first is the baseline), on one jitr-train
config (``--config=FILE:SPEC`` and ``--config.FIELD=VALUE`` overrides, as jitr-train
takes them):

* the host side, over the first ``--batches`` batches of epoch 0
  (:func:`jitr.data.pairs.epoch_batches`, the training augmentation left out): the mean
  width a caption is padded to (``Σ_c width_c · rows_c / B``) and the distinct tuples of
  chunk widths (each compiles the train step once);
* the step: :func:`jitr.experiment.run_estimate.estimate_run` with ``token_chunks`` set
  (the run's network, optimizer and data, the max-violation triplet alone; the median of
  ``--steps`` steps that ran an already compiled step), and the mean seconds a step that
  compiled took beyond it (a chunked step holds one text encoder per chunk, so it
  compiles longer);
* an epoch's cost, ``steps_per_epoch × step + width tuples × compile`` (the width
  tuples of the first ``--batches`` batches), and the baseline's step and epoch over each.

Usage::

    python scripts/bench_token_chunks.py --config=configs/shapes.py:triplet,vseinf_minilm \\
      --chunks=1,2,4 [--steps=10] [--batches=400] [--config.data_dir=DIR]
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import os
import platform
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # jitr and configs/ from this checkout, installed or not


def padded_widths(split, *, batch_size: int, chunks: int, shards: int, buckets, batches: int):
  """``(mean padded width of a caption, {width tuple: batches})`` over the first
  ``batches`` batches of epoch 0 with ``chunks`` chunks (1: the batch's ``tokens``)."""
  from jitr.data import pairs
  from jitr.data.batch_keys import token_chunk_key

  tuples, widths = {}, []
  epoch = pairs.epoch_batches(
    split,
    batch_size=batch_size,
    seed=0,
    epoch=0,
    buckets=buckets,
    chunking=pairs.TokenChunking(chunks, shards=shards),
  )
  for batch in itertools.islice(epoch, batches):
    if chunks == 1:
      shape = (batch["tokens"].shape[1],)
    else:
      shape = tuple(batch[token_chunk_key(c)].shape[1] for c in range(chunks))
    tuples[shape] = tuples.get(shape, 0) + 1
    widths.append(float(np.mean(shape)))
  return float(np.mean(widths)), tuples


def main(argv=None) -> None:
  argv = sys.argv[1:] if argv is None else list(argv)
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--chunks", default="1,2,4", help="chunk counts, the first the baseline")
  parser.add_argument("--steps", type=int, default=10, help="measured steps per chunk count")
  parser.add_argument("--batches", type=int, default=400, help="batches the widths are counted on")
  args, config_argv = parser.parse_known_args(argv)
  if not any(a.startswith("--config=") for a in config_argv):
    parser.error("expected --config=FILE:SPEC (and any --config.FIELD=VALUE)")

  import jax

  from jitr.experiment.loaded_data import load_data
  from jitr.experiment.run_estimate import estimate_run
  from jitr.papers.run_configs import command_config

  config = command_config(["bench_token_chunks", *config_argv])
  counts = [int(c) for c in args.chunks.split(",")]
  data = load_data(config, config.data_dir, teachers=False)
  train = data.splits["train"]
  rows = []
  for chunks in counts:
    mean_width, tuples = padded_widths(
      train,
      batch_size=config.batch_size,
      chunks=chunks,
      shards=jax.device_count(),
      buckets=tuple(config.token_buckets),
      batches=args.batches,
    )
    measured = config.copy_and_resolve_references()
    measured.token_chunks = chunks
    estimate = estimate_run(measured, steps=args.steps)
    epoch_s = estimate.steps / config.num_epochs * estimate.step_s
    epoch_s += len(tuples) * estimate.compile_s
    rows.append((chunks, mean_width, len(tuples), estimate.step_s, estimate.compile_s, epoch_s))
    print(f"chunks {chunks}: {estimate.step_s:.3f} s/step", file=sys.stderr)

  device = jax.devices()[0]
  print(
    f"{dt.date.today()} · {jax.device_count()} × {getattr(device, 'device_kind', device.platform)}"
    f" · {platform.processor() or platform.machine()} · {os.cpu_count()} cores · "
    f"{' '.join(config_argv)} · batch {config.batch_size}"
  )
  print()
  print(
    "| token_chunks | mean padded width | width tuples | step (s) | compile (s) | epoch (s) "
    "| step speed-up | epoch speed-up |"
  )
  print("|---:|---:|---:|---:|---:|---:|---:|---:|")
  base_step, base_epoch = rows[0][3], rows[0][5]
  for chunks, width, distinct, step_s, compile_s, epoch_s in rows:
    print(
      f"| {chunks} | {width:.1f} | {distinct} | {step_s:.3f} | {compile_s:.0f} | {epoch_s:.0f} "
      f"| {base_step / step_s:.2f}× | {base_epoch / epoch_s:.2f}× |"
    )


if __name__ == "__main__":
  main()
