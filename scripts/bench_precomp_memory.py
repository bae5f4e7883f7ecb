#!/usr/bin/env python
"""Benchmark: peak memory of training from a Flickr30K-sized precomp split.

A ``*_precomp`` split's features (``{split}_ims.npy``, ``[N, 36, 2048]`` float32: 8.5 GB
for F30K's 29,000 train images) are memory-mapped by :func:`jitr.data.precomp.load_precomp_split`;
a train step reads only its batch's rows. This script shows what that costs in resident
memory: a process that loads the data and trains keeps a peak RSS that is a small part of
the feature file.

1. ``--root=DIR``: where ``DIR/f30k_precomp`` lacks its six files (or holds a train split of
   another size), an F30K-sized split is written there: ``--num_images`` (29,000) train
   images and ``--num_eval_images`` (1,000) dev and test images of seeded random features,
   written in chunks through ``np.lib.format.open_memmap`` (never the whole array in
   memory), and 5 captions per image of 3-12 words from a fixed word list.
2. For each model of ``--models`` (``vse``: configs/paper.py's ``f30k,vsepp,triplet``;
   ``sgr``: its ``f30k,sgr,triplet``; both triplet loss only, ``graded`` empty, batch
   ``--batch_size``, compilation cache off), a child process (this script with a hidden
   flag, so its peak RSS is its own) does what ``jitr-train`` does up to its first steps:
   ``jitr.experiment.load_data``, ``initial_state``, ``losses.objective`` and
   ``training.DataParallel(training.make_train_step(...))``; then it runs ``--steps`` steps
   on ``pairs.epoch_batches``' batches, each built from the memmap, put on the device and
   waited for. It reports its peak RSS (``VmHWM`` of ``/proc/self/status``) after loading
   the data and after the steps, the resident anonymous and file-backed pages then
   (``RssAnon`` / ``RssFile`` of ``/proc/self/status``: file-backed pages are the mapped
   feature file's, which the kernel can drop at any time), and the median seconds per step
   after the first (compiling) one.
3. One Markdown table: model, train images, feature file size, the two peaks, the final
   peak as a percentage of the feature file, s/step; above it the machine (CPUs,
   ``MemTotal``), the date and each model's settings.

``--embed_dim`` / ``--sim_dim`` / ``--word_dim`` (0: the paper config's) shrink the models,
e.g. for a smoke run; the settings used are printed.

Usage: python scripts/bench_precomp_memory.py --root=/tmp/f30k_bench [--models=vse,sgr]
  [--steps=5] [--batch_size=128] [--num_images=29000] [--num_eval_images=1000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # jitr and configs/ from this checkout, installed or not

NUM_REGIONS, FEATURE_DIM, CAPTIONS_PER_IMAGE = 36, 2048, 5
SPLITS = ("train", "dev", "test")
PAPER_MODELS = {"vse": "vsepp", "sgr": "sgr"}  # this script's name -> configs/paper.py's
WORDS = (
  "a an the two three man woman child children dog dogs cat people group boy girl player "
  "street water grass beach field snow park bench table road building wall shirt hat ball "
  "bike car boat red blue green white black yellow young old small large is are sits "
  "stands runs walks jumps plays holds looks rides wearing with on in at near under over "
  "next to of and while front behind"
).split()
CHILD_RESULT = "precomp memory result: "  # the child's stdout line: this prefix + JSON
GIB = 2**30
KIB = 2**10
CHUNK_IMAGES = 256  # images per chunk written (75 MB of float32 features)


# ----------------------------------------------------------------------------- the split


def _npy_shape(path: str) -> tuple[int, ...] | None:
  """The shape in ``path``'s .npy header, or None where it is not a readable .npy."""
  try:
    return np.load(path, mmap_mode="r").shape
  except (OSError, ValueError):
    return None


def split_is_complete(folder: str, num_images: int, num_eval_images: int) -> bool:
  """Whether ``folder`` holds all six files, the ``.npy`` ones of the asked shapes."""
  for split in SPLITS:
    n = num_images if split == "train" else num_eval_images
    if not os.path.isfile(os.path.join(folder, f"{split}_caps.txt")):
      return False
    if _npy_shape(os.path.join(folder, f"{split}_ims.npy")) != (n, NUM_REGIONS, FEATURE_DIM):
      return False
  return True


def write_features(path: str, n: int, rng: np.random.Generator) -> None:
  """``[n, 36, 2048]`` float32 of ``rng`` at ``path``, ``CHUNK_IMAGES`` images at a time
  through ``open_memmap`` (written to ``path.partial``, then renamed)."""
  partial = path + ".partial"
  out = np.lib.format.open_memmap(
    partial, mode="w+", dtype=np.float32, shape=(n, NUM_REGIONS, FEATURE_DIM)
  )
  for lo in range(0, n, CHUNK_IMAGES):
    hi = min(n, lo + CHUNK_IMAGES)
    out[lo:hi] = rng.standard_normal((hi - lo, NUM_REGIONS, FEATURE_DIM), dtype=np.float32)
    out.flush()  # written back chunk by chunk: dirty pages never pile up
  del out
  os.replace(partial, path)


def write_captions(path: str, n: int, rng: np.random.Generator) -> None:
  """``5 n`` captions of 3-12 words of ``WORDS``, one a line."""
  lengths = rng.integers(3, 13, CAPTIONS_PER_IMAGE * n)
  words = rng.integers(0, len(WORDS), int(lengths.sum()))
  ends = np.cumsum(lengths)
  with open(path + ".partial", "w", encoding="utf-8") as f:
    for start, end in zip(ends - lengths, ends, strict=True):
      f.write(" ".join(WORDS[w] for w in words[start:end]) + "\n")
  os.replace(path + ".partial", path)


def generate_split(folder: str, num_images: int, num_eval_images: int, seed: int = 0) -> None:
  """An F30K-like ``folder``: train ``num_images``, dev and test ``num_eval_images``."""
  os.makedirs(folder, exist_ok=True)
  for i, split in enumerate(SPLITS):
    n = num_images if split == "train" else num_eval_images
    rng = np.random.default_rng([seed, i])
    write_captions(os.path.join(folder, f"{split}_caps.txt"), n, rng)
    write_features(os.path.join(folder, f"{split}_ims.npy"), n, rng)


# ----------------------------------------------------------------------------- the child


def run_config(args, model: str):
  """configs/paper.py's ``f30k,<model>,triplet`` on ``args.root``: triplet only, graded
  empty, batch ``args.batch_size``, no compilation cache, sizes from the flags."""
  import ml_collections

  from configs import paper

  config = paper.get_config(f"f30k,{PAPER_MODELS[model]},triplet")
  config.precomp_root = os.path.abspath(args.root)
  config.data_dir = os.path.join(os.path.abspath(args.root), "cache")
  config.graded = ml_collections.ConfigDict({})
  config.loss = ml_collections.ConfigDict({"triplet": dict(config.loss.triplet)})
  config.batch_size = args.batch_size
  config.compilation_cache = False
  for field in ("embed_dim", "sim_dim", "word_dim"):
    value = getattr(args, field)
    if value and field in config.model:
      config.model[field] = value
  return config


def _proc_status_kib(*fields: str) -> dict[str, int]:
  """``{field: kB}`` of ``/proc/self/status`` (empty where there is none)."""
  out = {}
  try:
    with open("/proc/self/status") as f:
      for line in f:
        name, _, value = line.partition(":")
        if name in fields:
          out[name] = int(value.split()[0])
  except OSError:
    pass
  return out


def _memory() -> dict:
  """Peak RSS so far and the resident anonymous / file pages now, in KiB. The peak is
  ``VmHWM`` of ``/proc/self/status`` (this program's own address space) where there is one:
  ``ru_maxrss`` also keeps the parent's RSS at the fork (Linux records the old address
  space's peak at ``exec``), which here includes the pages of the split it just wrote."""
  status = _proc_status_kib("VmHWM", "RssAnon", "RssFile")
  peak = status.pop("VmHWM", None)
  if peak is None:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak = peak // KIB if sys.platform == "darwin" else peak  # bytes on macOS, else KiB
  return {"peak_kib": peak, **status}


def child(args) -> None:
  """Loads ``args.child``'s run as jitr-train does, runs ``args.steps`` steps, prints
  ``CHILD_RESULT`` + JSON."""
  import itertools

  import jax

  from jitr.data import pairs
  from jitr.experiment import load_data
  from jitr.experiment.model_state import initial_state
  from jitr.experiment.run_config import check_train_config, resolved_config
  from jitr.experiment.train import data_parallel_step

  config = run_config(args, args.child)
  check_train_config(config)
  config = resolved_config(config)
  start = time.perf_counter()
  data = load_data(config, config.data_dir)
  train = data.splits["train"]
  load_s = time.perf_counter() - start
  after_load = _memory()

  steps_per_epoch = pairs.steps_per_epoch(train, config.batch_size)
  model, state = initial_state(config, len(data.vocab), train, steps_per_epoch)
  parallel = data_parallel_step(config, model, data.aggregates, steps_per_epoch)
  state = parallel.put_state(state)
  batches = pairs.epoch_batches(train, batch_size=config.batch_size, seed=config.seed, epoch=0)
  times, losses_seen = [], []
  for batch in itertools.islice(batches, args.steps):
    t0 = time.perf_counter()
    state, metrics = parallel(state, parallel.put_batch(batch))
    losses_seen.append(float(jax.block_until_ready(metrics["loss"])))
    times.append(time.perf_counter() - t0)
  jax.block_until_ready(state)
  result = {
    "model": args.child,
    "settings": config.model.to_dict(),
    "train_images": int(train.num_images),
    "train_captions": int(train.num_captions),
    "feature_bytes": os.path.getsize(os.path.join(args.root, "f30k_precomp", "train_ims.npy")),
    "load_s": load_s,
    "after_load": after_load,
    "after_steps": _memory(),
    "step_s": times,
    "losses": losses_seen,
  }
  print(CHILD_RESULT + json.dumps(result), flush=True)


def measure(args, model: str) -> dict:
  """``child`` of ``model`` in its own process: its result, or ``{"failed": ...}`` (its
  stderr's end then printed to stderr)."""
  command = [sys.executable, os.path.abspath(__file__), f"--child={model}"]
  for flag in ("root", "batch_size", "steps", "embed_dim", "sim_dim", "word_dim"):
    command.append(f"--{flag}={getattr(args, flag)}")
  out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
  for line in reversed(out.stdout.splitlines()):
    if line.startswith(CHILD_RESULT):
      return json.loads(line[len(CHILD_RESULT) :])
  sys.stderr.write(f"{model}: the child process failed:\n{out.stderr[-3000:]}\n")
  return {"model": model, "failed": f"exit code {out.returncode}"}


# ----------------------------------------------------------------------------- the table

HEADER = (
  "| model | train images | feature file (GiB) | peak RSS after loading (GiB) |"
  " peak RSS after the steps (GiB) | peak RSS / file size (%) | s/step |"
)


def row(result: dict) -> str:
  """The table row of a child's ``result``: sizes in GiB, the ratio of the final peak RSS
  to the feature file, the median seconds per step after the first."""
  if "failed" in result:
    return f"| {result['model']} | failed ({result['failed']}) | | | | | |"
  size = result["feature_bytes"] / GIB
  load_peak = result["after_load"]["peak_kib"] * KIB / GIB
  peak = result["after_steps"]["peak_kib"] * KIB / GIB
  timed = result["step_s"][1:]
  step = f"{statistics.median(timed):.2f}" if timed else "—"
  return (
    f"| {result['model']} | {result['train_images']:,} | {size:.3f} | {load_peak:.3f} |"
    f" {peak:.3f} | {100 * peak / size:.1f} | {step} |"
  )


def mem_total_gib() -> float | None:
  """``MemTotal`` of ``/proc/meminfo`` in GiB, or None where it does not say."""
  try:
    with open("/proc/meminfo") as f:
      for line in f:
        if line.startswith("MemTotal:"):
          return int(line.split()[1]) / 2**20
  except OSError:
    pass
  return None


def details(result: dict) -> str:
  """One line of a child's settings and memory beyond the table."""
  if "failed" in result:
    return f"- {result['model']}: failed"
  gib = lambda kib: f"{kib * KIB / GIB:.2f}"  # noqa: E731
  load, steps = result["after_load"], result["after_steps"]
  return (
    f"- {result['model']}: model {json.dumps(result['settings'], sort_keys=True)}; "
    f"{result['train_captions']:,} train captions; load_data {result['load_s']:.1f} s; "
    f"resident now (GiB) after loading: anon {gib(load.get('RssAnon', 0))}, file "
    f"{gib(load.get('RssFile', 0))}; after the steps: anon {gib(steps.get('RssAnon', 0))}, "
    f"file {gib(steps.get('RssFile', 0))}; step times (s) "
    + ", ".join(f"{t:.2f}" for t in result["step_s"])
    + "; losses "
    + ", ".join(f"{x:.4f}" for x in result["losses"])
  )


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--root", required=True, help="holds (or gets) f30k_precomp/")
  parser.add_argument("--num_images", type=int, default=29000, help="train images")
  parser.add_argument("--num_eval_images", type=int, default=1000, help="dev and test images")
  parser.add_argument("--models", default="vse,sgr", help="comma list of vse, sgr")
  parser.add_argument("--batch_size", type=int, default=128)
  parser.add_argument("--steps", type=int, default=5, help="train steps (the first compiles)")
  parser.add_argument("--embed_dim", type=int, default=0, help="0: the paper config's (1024)")
  parser.add_argument("--sim_dim", type=int, default=0, help="SGR; 0: the paper config's (256)")
  parser.add_argument("--word_dim", type=int, default=0, help="0: the paper config's (300)")
  parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.child is not None:
    return child(args)
  models = [m.strip() for m in args.models.split(",") if m.strip()]
  unknown = sorted(set(models) - set(PAPER_MODELS))
  if unknown or not models:
    parser.error(f"--models: unknown {unknown}; expected some of {sorted(PAPER_MODELS)}")

  folder = os.path.join(args.root, "f30k_precomp")
  if split_is_complete(folder, args.num_images, args.num_eval_images):
    print(f"{folder}: using the split there")
  else:
    start = time.perf_counter()
    generate_split(folder, args.num_images, args.num_eval_images)
    print(
      f"{folder}: generated train {args.num_images:,} / dev and test {args.num_eval_images:,}"
      f" images x {NUM_REGIONS} x {FEATURE_DIM} float32 in {time.perf_counter() - start:.1f} s"
    )
  total = mem_total_gib()
  print(
    f"machine: {os.cpu_count()} CPUs, MemTotal "
    + (f"{total:.1f} GiB" if total is not None else "unknown")
    + f"; {dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; load average "
    + " ".join(f"{x:.1f}" for x in os.getloadavg())
  )
  print(
    f"each model in its own process: load_data, initial_state, DataParallel(make_train_step),"
    f" {args.steps} steps of batch {args.batch_size}; s/step = median after the first"
    " (compiling) step, each step's batch built from the memmap, put and waited for"
  )
  results = [measure(args, model) for model in models]
  for result in results:
    print(details(result))
  print()
  print(HEADER)
  print("|---|---:|---:|---:|---:|---:|---:|")
  for result in results:
    print(row(result), flush=True)
  if any("failed" in r for r in results):
    sys.exit(1)


if __name__ == "__main__":
  main()
