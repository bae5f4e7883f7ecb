#!/usr/bin/env python
"""Train one row per loss on jitr_shapes and print the results table (docs/training.md).

Runs ``jitr-train --config=configs/shapes.py:NAME[,MODEL]`` for every variant, model
and seed in its own workdir (``workdirs/shapes/NAME`` for the default ``vse`` model,
``NAME_MODEL`` for the others, ``..._seedS`` for seeds after 0; a finished run is
reused), then prints the test metrics of each best checkpoint, measured with the
exact relevance: one value per row for one seed, ``mean ± std`` over seeds
(sample std) for several, and then each row's difference from the first row with
``*`` where it exceeds the seed-to-seed spread (``|Δmean| > std_a + std_b``).

A ``hmean`` or ``teacher`` row's teacher is the ``vse`` ``triplet`` run of the same seed, trained
first (added to the runs if not asked for). With ``--jobs=J > 1`` seed 0's rows run
one at a time (they build the dataset and each estimator's relevance records,
shared by every seed), then the other seeds' rows up to J at once.

Usage: python scripts/shapes_table.py [--variants triplet,sndcg,...] [--models vse,sgr,...]
  [--seeds 3] [--jobs 2] [--set config.field=value ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from configs.shapes import (  # noqa: E402
  MODELS,
  TEACHER_SOURCES,
  TOWER_VARIANTS,
  VARIANTS,
  fits,
  teacher_relevance,
)
from jitr.training.reporting import RESULT_KEYS  # noqa: E402

LABELS = {
  "triplet": "VSE++ triplet (LMH)",
  "sndcg": "triplet + Smooth-NDCG (sentence RSC)",
  "cmal2r": "CMAL²R adaptive listwise",
  "sam": "SAM (CIDEr-D margin, hard, + triplet)",
  "lseh": "LSEH (TF-IDF+SVD hard negatives)",
  "oracle": "triplet + Smooth-NDCG (oracle relevance)",
  "hmean": "triplet + Smooth-NDCG (hmean of sentence RSC and the triplet teacher)",
  "teacher": "triplet + Smooth-NDCG (the triplet teacher's relevance)",
  "calibrated": "triplet + Smooth-NDCG (sentence RSC, CrowdFlower isotonic calibration)",
  "coverage": "triplet + Smooth-NDCG (token coverage)",
  "coverage_minmax": "triplet + Smooth-NDCG (token coverage, per-query minmax then squared)",
  "coverage_sharp": "triplet + Smooth-NDCG (token coverage, per-query minmax then power 8)",
  "coverage_sharp_w075": "triplet + 0.75 Smooth-NDCG (token coverage, minmax then power 8)",
  "coverage_hmean": "triplet + Smooth-NDCG (hmean of token coverage and the triplet teacher)",
  "infonce": "InfoNCE (learned temperature)",
  "sigmoid": "sigmoid (learned temperature and bias)",
  "infonce_sndcg": "InfoNCE + Smooth-NDCG (sentence RSC)",
  "sigmoid_sndcg": "sigmoid + Smooth-NDCG (sentence RSC)",
}
# MODEL -> label prefix of its rows ("vse", the default, has none: the first rows of the table)
MODEL_LABELS = {
  "vse": "",
  "sgr": "SGR: ",
  "saf": "SAF: ",
  "vsrn": "VSRN: ",
  "cvse": "CVSE: ",
  "vseinf_minilm": "VSE∞ (MiniLM-L6): ",
  "vit": "ViT from scratch: ",
}


@dataclasses.dataclass(frozen=True)
class Run:
  """One training run: a variant of one network at one seed."""

  name: str
  model: str
  seed: int

  def workdir(self, root: str) -> str:
    """``NAME`` for the default model, else ``NAME_MODEL``; ``_seedS`` after seed 0."""
    base = self.name if self.model == "vse" else f"{self.name}_{self.model}"
    return os.path.join(root, base if self.seed == 0 else f"{base}_seed{self.seed}")

  def config_spec(self) -> str:
    """The ``configs/shapes.py`` argument: ``NAME`` or ``NAME,MODEL``."""
    return self.name if self.model == "vse" else f"{self.name},{self.model}"

  def teacher(self) -> Run | None:
    """The run whose checkpoint teaches this one (the ``vse`` triplet of its seed), or None."""
    return Run("triplet", "vse", self.seed) if self.name in TEACHER_SOURCES else None


def plan(variants: Sequence[str], models: Sequence[str], seeds: int) -> list[Run]:
  """Every asked run of a variant that fits its network (``fits``), seed-major, each
  teacher before its students (added if not asked)."""
  runs: list[Run] = []
  for seed in range(seeds):
    for model in models:
      for name in [v for v in variants if fits(v, model)]:
        run = Run(name, model, seed)
        teacher = run.teacher()
        if teacher is not None and teacher not in runs:
          runs.append(teacher)
        if run not in runs:
          runs.append(run)
  return runs


def mean_std(values: Sequence[float]) -> tuple[float, float]:
  """The mean and the sample standard deviation (0 for a single value)."""
  mean = sum(values) / len(values)
  if len(values) < 2:
    return mean, 0.0
  return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def exceeds_spread(a: tuple[float, float], b: tuple[float, float]) -> bool:
  """Whether two ``(mean, std)`` differ by more than their spreads: ``|Δ| > std_a + std_b``."""
  return abs(a[0] - b[0]) > a[1] + b[1]


def format_tables(rows: Sequence[tuple[str, list[dict], list[float]]]) -> str:
  """The results table (``mean ± std`` when a row has several seeds) and, for
  several seeds, the differences from the first row (``*``: beyond the spread).

  ``rows``: ``(label, [metrics per seed], [train seconds of the runs made now])``.
  """
  names = [name for _, name in RESULT_KEYS]
  several = any(len(per_seed) > 1 for _, per_seed, _ in rows)
  stats = [
    {key: mean_std([m.get(key, math.nan) for m in per_seed]) for key, _ in RESULT_KEYS}
    for _, per_seed, _ in rows
  ]
  lines = [
    "| loss | " + ("seeds | " if several else "") + " | ".join(names) + " | train s |",
    "|---|" + "---|" * (len(names) + 1 + several),
  ]
  for (label, per_seed, seconds), stat in zip(rows, stats):
    cells = [f"{mean:.2f} ± {std:.2f}" if several else f"{mean:.2f}" for mean, std in stat.values()]
    took = f"{sum(seconds) / len(seconds):.0f}" if seconds else ""
    seeds = f"{len(per_seed)} | " if several else ""
    lines.append(f"| {label} | {seeds}" + " | ".join(cells) + f" | {took} |")
  if several and len(rows) > 1:
    lines += ["", f"Difference from '{rows[0][0]}' (*: beyond the seed-to-seed spread):", ""]
    lines += ["| loss | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for (label, _, _), stat in zip(rows[1:], stats[1:]):
      cells = [
        f"{stat[key][0] - stats[0][key][0]:+.2f}"
        + ("*" if exceeds_spread(stat[key], stats[0][key]) else "")
        for key, _ in RESULT_KEYS
      ]
      lines.append(f"| {label} | " + " | ".join(cells) + " |")
  return "\n".join(lines)


def command(run: Run, root: str, data_dir: str, overrides: Sequence[str]) -> list[str]:
  """The ``jitr-train`` command of one run (its teacher's workdir passed when it has one)."""
  cmd = [
    sys.executable,
    "-m",
    "jitr.apps.train",
    f"--config={ROOT}/configs/shapes.py:{run.config_spec()}",
    f"--workdir={run.workdir(root)}",
    f"--config.data_dir={data_dir}",
    f"--config.seed={run.seed}",
  ]
  teacher = run.teacher()
  if teacher is not None:
    cmd.append(f"--config.graded.relevance={teacher_relevance(run.name, teacher.workdir(root))}")
  return cmd + [f"--{o}" for o in overrides]


def metrics_path(run: Run, root: str) -> str:
  return os.path.join(run.workdir(root), "metrics.json")


def train_all(runs: list[Run], root: str, data_dir: str, overrides, jobs: int) -> dict[Run, float]:
  """Train every run without ``metrics.json``; returns the seconds of each one trained.
  Seed 0's runs go one at a time, then up to ``jobs`` at once, a run waiting for its
  teacher."""
  todo = [r for r in runs if not os.path.exists(metrics_path(r, root))]
  running: dict[Run, tuple[subprocess.Popen, float]] = {}
  seconds: dict[Run, float] = {}

  def ready(run: Run) -> bool:
    teacher = run.teacher()
    waits = teacher is not None and (teacher in todo or teacher in running)
    limit = 1 if run.seed == 0 or any(r.seed == 0 for r in (*todo, *running)) else jobs
    return not waits and len(running) < limit

  while todo or running:
    for run in [r for r in todo if ready(r)]:
      if not ready(run):
        break
      cmd = command(run, root, data_dir, overrides)
      print("running:", " ".join(cmd), flush=True)
      log = open(os.path.join(root, f"{os.path.basename(run.workdir(root))}.log"), "w")
      running[run] = (subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=log), time.time())
      todo.remove(run)
    time.sleep(2)
    for run, (process, start) in list(running.items()):
      if process.poll() is None:
        continue
      del running[run]
      if process.returncode != 0:
        for other, _ in running.values():
          other.terminate()
        sys.exit(f"{run.workdir(root)}: jitr-train exited with {process.returncode}")
      seconds[run] = time.time() - start
      print(f"finished {run.workdir(root)} in {seconds[run]:.0f} s", flush=True)
  return seconds


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--variants", default=",".join(VARIANTS))
  parser.add_argument(
    "--models", default="vse", help=f"comma-separated networks, of {','.join(MODELS)}"
  )
  parser.add_argument("--seeds", type=int, default=1, help="seeds 0..S-1 of every row")
  parser.add_argument("--jobs", type=int, default=1, help="runs at once after seed 0's")
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
  models, variants = args.models.split(","), args.variants.split(",")
  unknown = [m for m in models if m not in MODELS] + [v for v in variants if v not in VARIANTS]
  if unknown:
    parser.error(
      f"unknown {unknown}; expected --models of {list(MODELS)}, --variants of {VARIANTS}"
    )
  if args.seeds < 1 or args.jobs < 1:
    parser.error("--seeds and --jobs must be at least 1")
  os.makedirs(args.root, exist_ok=True)
  runs = plan(variants, models, args.seeds)
  if not runs:
    parser.error(f"no variant of {variants} trains {models}: {list(TOWER_VARIANTS)} train vit")
  seconds = train_all(runs, args.root, args.data_dir, args.set, args.jobs)
  rows = []
  for model in models:
    for name in [v for v in variants if fits(v, model)]:
      asked = [r for r in runs if (r.name, r.model) == (name, model)]
      per_seed = []
      for run in asked:
        with open(metrics_path(run, args.root)) as f:
          per_seed.append(json.load(f))
      took = [seconds[r] for r in asked if r in seconds]
      rows.append((MODEL_LABELS[model] + LABELS[name], per_seed, took))
  print()
  print(format_tables(rows))


if __name__ == "__main__":
  main()
