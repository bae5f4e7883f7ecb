#!/usr/bin/env python
"""Train one row per loss on jitr_shapes and print the results table (README's).

Runs ``jitr-train --config=configs/shapes.py:NAME[,MODEL]`` for every variant and
model in its own workdir (``workdirs/shapes/NAME`` for the default ``vse`` model,
``workdirs/shapes/NAME_MODEL`` for the others; a finished run is reused), then prints
the test metrics of each best checkpoint, measured with the exact relevance.

Usage: python scripts/shapes_table.py [--variants triplet,sndcg,...] [--models vse,sgr,...]
  [--set config.field=value ...]
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

from configs.shapes import MODELS, VARIANTS  # noqa: E402
from jitr.training.reporting import RESULT_KEYS  # noqa: E402

LABELS = {
  "triplet": "VSE++ triplet (LMH)",
  "sndcg": "triplet + Smooth-NDCG (sentence RSC)",
  "cmal2r": "CMAL²R adaptive listwise",
  "sam": "SAM (CIDEr-D margin, hard, + triplet)",
  "lseh": "LSEH (TF-IDF+SVD hard negatives)",
  "oracle": "triplet + Smooth-NDCG (oracle relevance)",
}
# MODEL -> label prefix of its rows ("vse", the default, has none: README's original rows)
MODEL_LABELS = {"vse": "", "sgr": "SGR: ", "saf": "SAF: ", "vsrn": "VSRN: "}


def row_name(name: str, model: str) -> str:
  """The workdir name of one row: ``NAME`` for the default model, else ``NAME_MODEL``."""
  return name if model == "vse" else f"{name}_{model}"


def config_spec(name: str, model: str) -> str:
  """The ``configs/shapes.py`` argument of one row: ``NAME`` or ``NAME,MODEL``."""
  return name if model == "vse" else f"{name},{model}"


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--variants", default=",".join(VARIANTS))
  parser.add_argument(
    "--models", default="vse", help=f"comma-separated networks, of {','.join(MODELS)}"
  )
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
  models = args.models.split(",")
  unknown = [m for m in models if m not in MODELS]
  if unknown:
    parser.error(f"--models: unknown {unknown}; expected some of {list(MODELS)}")
  rows = []
  for model, name in ((m, n) for m in models for n in args.variants.split(",")):
    workdir = os.path.join(args.root, row_name(name, model))
    metrics_path = os.path.join(workdir, "metrics.json")
    seconds = None
    if not os.path.exists(metrics_path):
      start = time.time()
      cmd = [
        sys.executable,
        "-m",
        "jitr.apps.train",
        f"--config={ROOT}/configs/shapes.py:{config_spec(name, model)}",
        f"--workdir={workdir}",
        f"--config.data_dir={args.data_dir}",
      ]
      cmd += [f"--{o}" for o in args.set]
      print("running:", " ".join(cmd), flush=True)
      subprocess.run(cmd, check=True, cwd=ROOT)
      seconds = time.time() - start
    with open(metrics_path) as f:
      metrics = json.load(f)
    rows.append((MODEL_LABELS[model] + LABELS[name], metrics, seconds))
  print("\n| loss | " + " | ".join(label for _, label in RESULT_KEYS) + " | train s |")
  print("|---|" + "---|" * (len(RESULT_KEYS) + 1))
  for label, metrics, seconds in rows:
    cells = " | ".join(f"{metrics.get(key, float('nan')):.2f}" for key, _ in RESULT_KEYS)
    print(f"| {label} | {cells} | {'' if seconds is None else f'{seconds:.0f}'} |")


if __name__ == "__main__":
  main()
