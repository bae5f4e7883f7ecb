#!/usr/bin/env python
"""Benchmark: what pinning a run's inputs costs on a Flickr30K-sized precomp folder.

A workdir pins every file its results depend on (:mod:`jitr.experiment.pinned_inputs`):
the first pin hashes each file once; a later check takes a file with the pinned path,
size and modification time as it is (a ``stat``) and hashes only the others. This script
measures the three cases side by side on one folder:

1. ``--root=DIR``: ``DIR/f30k_precomp`` is written F30K-sized where it is missing
   (``scripts/bench_precomp_memory.py``'s generator: ``--num_images`` (29,000) train and
   ``--num_eval_images`` (1,000) dev and test images of seeded random features, 5 captions
   each; 8.9 GB).
2. In one process, in this order: the first pin (no ``inputs.json``: every file hashed),
   a check against those pins (every file unchanged: ``stat`` only), and a check after the
   folder was moved (renamed within ``DIR``: every file hashed again, the same SHA-256s
   pass); then the folder is renamed back. Each is timed ``--repeats`` times (median).
3. One Markdown table: case, files hashed, GiB read, seconds, GiB/s and the time as a
   multiple of the stat-only check; above it the machine, the date and the folder size.
   The first pass reads from the page cache when the folder was just written or is small
   enough to stay cached (the machine's RAM is printed): a cold read also pays the disk.

Usage: python scripts/bench_pinned_inputs.py --root=/tmp/f30k_bench [--repeats=3]
  [--num_images=29000] [--num_eval_images=1000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # jitr and configs/ from this checkout, installed or not
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_precomp_memory import generate_split, split_is_complete  # noqa: E402


def run_config(root: str) -> dict:
  """configs/default.py's fields for an f30k_precomp run on ``root`` (no vocabulary file,
  concepts or BERT folder), as :func:`~jitr.experiment.pinned_inputs.run_inputs` reads them."""
  from configs import default

  config = default.get_config()
  config.dataset, config.precomp_root = "f30k_precomp", root
  return config.to_dict()


def timed(fn, repeats: int) -> tuple[float, object]:
  """``(median seconds, last result)`` of ``repeats`` calls of ``fn``."""
  times, result = [], None
  for _ in range(repeats):
    start = time.perf_counter()
    result = fn()
    times.append(time.perf_counter() - start)
  return statistics.median(times), result


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--root", default=os.path.join(tempfile.gettempdir(), "f30k_bench"))
  parser.add_argument("--num_images", type=int, default=29_000)
  parser.add_argument("--num_eval_images", type=int, default=1_000)
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args()

  from jitr import fileio
  from jitr.experiment import pinned_inputs

  root = os.path.abspath(args.root)
  folder = os.path.join(root, "f30k_precomp")
  if not split_is_complete(folder, args.num_images, args.num_eval_images):
    print(f"writing an F30K-sized split to {folder} ...", file=sys.stderr)
    generate_split(folder, args.num_images, args.num_eval_images)
  files = pinned_inputs.run_inputs(run_config(root), os.path.join(root, "workdir"))
  gib = sum(os.path.getsize(p) for p in files.values()) / 2**30
  hashed: list[str] = []
  digest = fileio.file_digest

  def counting(path, **kwargs):
    hashed.append(path)
    return digest(path, **kwargs)

  fileio.file_digest = counting
  workdir = tempfile.mkdtemp(prefix="pins-", dir=root)
  rows = []

  def case(name: str, fn) -> None:
    hashed.clear()
    seconds, _ = timed(fn, args.repeats)
    count = len(hashed) // args.repeats
    read = gib * count / len(files)
    rows.append((name, count, read, seconds))

  first = lambda: pinned_inputs.check_inputs(run_config(root), workdir)
  case("first pin (no inputs.json: every file hashed)", first)
  pinned_inputs.write_pins(workdir, first()[0])
  check = lambda: pinned_inputs.verify_inputs(run_config(root), workdir)
  case("check, files unchanged (stat only)", check)
  moved_root = root + "-moved"
  os.rename(root, moved_root)
  try:
    moved_workdir = os.path.join(moved_root, os.path.basename(workdir))
    moved = lambda: pinned_inputs.verify_inputs(run_config(moved_root), moved_workdir)
    case("check, folder moved (every file hashed, same SHA-256)", moved)
  finally:
    os.rename(moved_root, root)
  fileio.file_digest = digest

  meminfo = open("/proc/meminfo").readline().split()[1] if os.path.exists("/proc/meminfo") else "?"
  print(f"{platform.node()}: {os.cpu_count()} CPUs, MemTotal {meminfo} kB; {dt.date.today()}")
  print(f"{folder}: {len(files)} files, {gib:.2f} GiB; median of {args.repeats}\n")
  base = rows[1][3]
  print("| case | files hashed | GiB read | seconds | GiB/s | × stat-only check |")
  print("|---|---:|---:|---:|---:|---:|")
  for name, count, read, seconds in rows:
    rate = f"{read / seconds:.2f}" if count else "–"
    print(f"| {name} | {count} | {read:.2f} | {seconds:.4f} | {rate} | {seconds / base:,.0f}× |")


if __name__ == "__main__":
  main()
