#!/usr/bin/env python
"""Train one row per loss on jitr_shapes and print the results table (README's).

Runs ``jitr-train --config=configs/shapes.py:NAME`` for every variant in its own
workdir (``workdirs/shapes/NAME``; a finished run is reused), then prints the
test metrics of each best checkpoint, measured with the exact relevance.

Usage: python scripts/shapes_table.py [--variants triplet,sndcg,...] [--set config.field=value ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from configs.shapes import VARIANTS  # noqa: E402
from jitr.training.reporting import RESULT_KEYS  # noqa: E402

LABELS = {
  "triplet": "VSE++ triplet (LMH)",
  "sndcg": "triplet + Smooth-NDCG (sentence RSC)",
  "cmal2r": "CMAL²R adaptive listwise",
  "sam": "SAM (CIDEr-D margin, hard, + triplet)",
  "lseh": "LSEH (TF-IDF+SVD hard negatives)",
  "oracle": "triplet + Smooth-NDCG (oracle relevance)",
}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--variants", default=",".join(VARIANTS))
  parser.add_argument("--root", default=os.path.join(ROOT, "workdirs", "shapes"))
  parser.add_argument(
    "--data_dir",
    default=os.path.join(ROOT, "workdirs", "tfds"),
    help="TFDS + relevance TFRecords, shared with scripts/train.sh's default workdir",
  )
  parser.add_argument(
    "--set", action="append", default=[], help="config override, e.g. config.num_epochs=5"
  )
  args = parser.parse_args()
  rows = []
  for name in args.variants.split(","):
    workdir = os.path.join(args.root, name)
    metrics_path = os.path.join(workdir, "metrics.json")
    seconds = None
    if not os.path.exists(metrics_path):
      start = time.time()
      cmd = [
        sys.executable,
        "-m",
        "jitr.apps.train",
        f"--config={ROOT}/configs/shapes.py:{name}",
        f"--workdir={workdir}",
        f"--config.data_dir={args.data_dir}",
      ]
      cmd += [f"--{o}" for o in args.set]
      print("running:", " ".join(cmd), flush=True)
      subprocess.run(cmd, check=True, cwd=ROOT)
      seconds = time.time() - start
    with open(metrics_path) as f:
      metrics = json.load(f)
    rows.append((name, metrics, seconds))
  print("\n| loss | " + " | ".join(label for _, label in RESULT_KEYS) + " | train s |")
  print("|---|" + "---|" * (len(RESULT_KEYS) + 1))
  for name, metrics, seconds in rows:
    cells = " | ".join(f"{metrics.get(key, float('nan')):.2f}" for key, _ in RESULT_KEYS)
    print(f"| {LABELS[name]} | {cells} | {'' if seconds is None else f'{seconds:.0f}'} |")


if __name__ == "__main__":
  main()
