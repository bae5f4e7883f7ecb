#!/usr/bin/env python
"""Benchmark: jitr.evaluation vs eccv_caption on a 5K x 25K similarity matrix.

Prints, in one run and side by side:

1. The metric set eccv_caption computes (COCO 1K and 5K R@1/5/10, CxC R@K,
   ECCV Caption mAP@R / R-Precision / R@K, both directions): eccv_caption's time
   (building its ranking dicts from the matrix -- full rankings, which its COCO
   1K recalls need -- plus its metrics) against jitr's on the same matrix, the
   time ratio, and the largest difference between the two sets of numbers.
2. jitr's full metric set (adds median / mean rank, recall curves, NDCG@K with
   graded relevance, NCS / Semantic Recall, class-label MAP) and its cost.
3. Peak memory (RSS) of jitr in a fresh process on the dense 5K x 25K matrix,
   and on a 30K x 150K gallery given as embeddings (the similarity computed
   block by block: bounded memory).

The similarity matrix is random: uniform noise plus random boosts on the
annotated, ECCV and CxC positives, so that every metric is well inside (0, 1),
with repeated values nudged apart so that all rankings are unique.
Ground truth is eccv_caption's shipped COCO annotations.

Usage: python scripts/bench_eval.py [--large-images 30000 --large-captions 150000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings

import numpy as np


def _rss_mb() -> float:
  with open("/proc/self/status") as f:
    for line in f:
      if line.startswith("VmRSS:"):
        return int(line.split()[1]) / 1024
  return float("nan")


def _peak_mb() -> float:
  """Peak RSS of this process (VmHWM: unlike ru_maxrss, not inherited from
  the parent across fork + exec)."""
  with open("/proc/self/status") as f:
    for line in f:
      if line.startswith("VmHWM:"):
        return int(line.split()[1]) / 1024
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _eccv():
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import eccv_caption  # pylint: disable=g-import-not-at-top

    return eccv_caption.Metrics()


def coco_layout(eccv):
  cap_ids = np.array([int(c) for c in eccv.coco_ids])
  t2i = eccv.coco_gts["t2i"]
  owners = [t2i[int(c)][0] for c in cap_ids]
  img_ids = list(dict.fromkeys(owners))
  pos = {i: j for j, i in enumerate(img_ids)}
  return np.array(img_ids), cap_ids, np.array([pos[i] for i in owners])


def make_sim(eccv, img_ids, cap_ids, owner, seed=0):
  rng = np.random.default_rng(seed)
  sim = rng.random((len(img_ids), len(cap_ids)), dtype=np.float32)
  sim[owner, np.arange(len(cap_ids))] += rng.uniform(0.0, 0.5, len(cap_ids)).astype(np.float32)
  ipos = {int(i): j for j, i in enumerate(img_ids)}
  cpos = {int(c): j for j, c in enumerate(cap_ids)}
  for gts, boost in ((eccv.eccv_gts, 0.4), (eccv.cxc_gts, 0.3)):
    for iid, cids in gts["i2t"].items():
      js = [cpos[c] for c in cids if c in cpos]
      sim[ipos[iid], js] += rng.uniform(0.0, boost, len(js)).astype(np.float32)
  break_ties(sim, rng)
  return sim


def break_ties(sim, rng):
  """Nudges repeated values (within a row or a column) by a few ulps until
  there are none, so every ranking is unique: eccv_caption's dicts can then be
  built with numpy's default (fast, unstable) argsort and still agree exactly
  with jitr's index tie-break."""
  for _ in range(20):
    nudged = 0
    for m in (sim, sim.T):
      s = np.sort(m, axis=1)
      for i in np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1)):
        row = m[i]  # a view: writes go to `sim`
        _, first = np.unique(row, return_index=True)
        dup = np.ones(row.size, bool)
        dup[first] = False
        idx = np.flatnonzero(dup)
        row[idx] = row[idx] + np.spacing(row[idx]) * rng.integers(1, 64, idx.size)
        nudged += idx.size
    if not nudged:
      return
  raise RuntimeError("could not break the ties of the benchmark matrix")


def extended_sets(eccv, img_ids, cap_ids):
  from jitr.evaluation import positives_from_id_dicts  # pylint: disable=g-import-not-at-top

  return {
    name: (
      positives_from_id_dicts(g["i2t"], query_ids=img_ids, gallery_ids=cap_ids),
      positives_from_id_dicts(g["t2i"], query_ids=cap_ids, gallery_ids=img_ids),
    )
    for name, g in (("eccv", eccv.eccv_gts), ("cxc", eccv.cxc_gts))
  }


KS = (1, 5, 10)


def run_eccv(eccv, sim, img_ids, cap_ids):
  """eccv_caption's path: ranking dicts from the matrix, then its metrics."""
  t0 = time.perf_counter()
  i2t_order = np.argsort(-sim, axis=1)
  t2i_order = np.argsort(-sim.T, axis=1)
  i2t = {int(img_ids[i]): cap_ids[row].tolist() for i, row in enumerate(i2t_order)}
  t2i = {int(cap_ids[c]): img_ids[row].tolist() for c, row in enumerate(t2i_order)}
  del i2t_order, t2i_order
  t_dicts = time.perf_counter() - t0
  items = {"i2t": i2t, "t2i": t2i}
  out = {}
  t0 = time.perf_counter()
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    devnull = open(os.devnull, "w")
    stderr, sys.stderr = sys.stderr, devnull  # eccv_metrics prints tqdm bars
    try:
      for k in KS:
        for proto, fn in (
          ("folds", eccv.coco_1k_recalls),
          ("full", eccv.coco_5k_recalls),
          ("cxc", eccv.cxc_recalls),
          ("eccv", eccv.eccv_recalls),
        ):
          res = fn(items, "all", K=k)
          for d in ("i2t", "t2i"):
            out[f"{proto}/{d}/R@{k}"] = float(res[d])
      em = eccv.eccv_metrics(items, "all")
    finally:
      sys.stderr = stderr
      devnull.close()
  for d in ("i2t", "t2i"):
    out[f"eccv/{d}/mAP@R"] = float(em["eccv_map_at_r"][d])
    out[f"eccv/{d}/R-P"] = float(em["eccv_rprecision"][d])
  t_metrics = time.perf_counter() - t0
  return out, t_dicts, t_metrics


def jitr_comparable(sim, owner, ext):
  from jitr.evaluation import EvalOptions, evaluate_retrieval  # pylint: disable=g-import-not-at-top

  # mAP@R / R-P for the ECCV set only, R@K for all: what eccv_caption computes.
  options = EvalOptions(folds=5, extended_map=("eccv",), recall_ks=KS, curve_ks=KS, percent=False)
  return evaluate_retrieval(sim, caption_to_image=owner, extended_positives=ext, options=options)


def jitr_full(sim, owner, ext, rel, labels):
  from jitr.evaluation import (  # pylint: disable=g-import-not-at-top
    ClassLabels,
    EvalOptions,
    evaluate_retrieval,
  )

  return evaluate_retrieval(
    sim,
    caption_to_image=owner,
    extended_positives=ext,
    relevance=rel,
    labels=ClassLabels(labels),
    options=EvalOptions(folds=5, percent=False),
  )


def timed(fn, *args, repeats=3):
  t0 = time.perf_counter()
  out = fn(*args)
  cold = time.perf_counter() - t0
  warm = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    out = fn(*args)
    warm.append(time.perf_counter() - t0)
  return out, cold, min(warm)


# ----------------------------------------------------------------- children


def child_dense() -> dict:
  """Peak RSS of jitr's full metric set on the dense 5K x 25K problem."""
  eccv = _eccv()
  img_ids, cap_ids, owner = coco_layout(eccv)
  sim = make_sim(eccv, img_ids, cap_ids, owner)
  rng = np.random.default_rng(1)
  rel = rng.random(sim.shape, dtype=np.float32)
  labels = rng.integers(0, 10, len(img_ids))
  ext = extended_sets(eccv, img_ids, cap_ids)
  base = _rss_mb()
  t0 = time.perf_counter()
  jitr_full(sim, owner, ext, rel, labels)
  return {
    "inputs_mb": base,
    "peak_mb": _peak_mb(),
    "seconds": time.perf_counter() - t0,
    "matrix_mb": (sim.nbytes + rel.nbytes) / 2**20,
  }


def child_embeddings(n_img: int, n_cap: int, dim: int) -> dict:
  """Peak RSS of recall / ranks on an n_img x n_cap gallery from embeddings."""
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top

  from jitr.evaluation import (  # pylint: disable=g-import-not-at-top
    CrossModalScores,
    EvalOptions,
    evaluate_retrieval,
  )

  rng = np.random.default_rng(0)
  per = n_cap // n_img
  owner = np.repeat(np.arange(n_img), per)
  img = rng.standard_normal((n_img, dim)).astype(np.float32)
  cap = img[owner] + 3.0 * rng.standard_normal((n_cap, dim)).astype(np.float32)
  img /= np.linalg.norm(img, axis=1, keepdims=True)
  cap /= np.linalg.norm(cap, axis=1, keepdims=True)
  scores = CrossModalScores.from_embeddings(jnp.asarray(img), jnp.asarray(cap))
  base = _rss_mb()
  t0 = time.perf_counter()
  options = EvalOptions(folds=5, recall_ks=KS, curve_ks=KS)
  m = evaluate_retrieval(scores, caption_to_image=owner, options=options)
  return {
    "inputs_mb": base,
    "peak_mb": _peak_mb(),
    "seconds": time.perf_counter() - t0,
    "dense_would_be_mb": n_img * n_cap * 4 / 2**20,
    "rsum": m["full/rsum"],
    "rsum_1k": m["folds/rsum"],
  }


def _child(args: list[str]) -> dict:
  proc = subprocess.run(
    [sys.executable, __file__] + args, capture_output=True, text=True, check=False
  )
  if proc.returncode != 0:
    raise RuntimeError(f"child {args} failed:\n{proc.stderr[-3000:]}")
  return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------- main


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--child", choices=["dense", "embeddings"], help=argparse.SUPPRESS)
  parser.add_argument("--large-images", type=int, default=30000)
  parser.add_argument("--large-captions", type=int, default=150000)
  parser.add_argument("--dim", type=int, default=64)
  parser.add_argument("--skip-large", action="store_true")
  args = parser.parse_args()
  if args.child == "dense":
    print(json.dumps(child_dense()))
    return
  if args.child == "embeddings":
    print(json.dumps(child_embeddings(args.large_images, args.large_captions, args.dim)))
    return

  import jax  # pylint: disable=g-import-not-at-top

  eccv = _eccv()
  img_ids, cap_ids, owner = coco_layout(eccv)
  sim = make_sim(eccv, img_ids, cap_ids, owner)
  ext = extended_sets(eccv, img_ids, cap_ids)
  rng = np.random.default_rng(1)
  rel = rng.random(sim.shape, dtype=np.float32)
  labels = rng.integers(0, 10, len(img_ids))
  print(
    f"# jitr.evaluation vs eccv_caption — {sim.shape[0]} x {sim.shape[1]} "
    f"similarity, {os.cpu_count()} CPU cores, jax {jax.__version__} "
    f"({jax.default_backend()}), load average {os.getloadavg()[0]:.1f}"
  )
  print()

  theirs, t_dicts, t_metrics = run_eccv(eccv, sim, img_ids, cap_ids)
  ours, cold, warm = timed(jitr_comparable, sim, owner, ext)
  diffs = [abs(ours[k] - v) for k, v in theirs.items()]
  full, full_cold, full_warm = timed(jitr_full, sim, owner, ext, rel, labels, repeats=1)
  t_eccv = t_dicts + t_metrics

  print("## The metrics eccv_caption computes (COCO 1K/5K, CxC, ECCV Caption; both directions)")
  print()
  print("| implementation | ranking dicts (s) | metrics (s) | total (s) | ratio vs jitr (warm) |")
  print("|---|---:|---:|---:|---:|")
  print(
    f"| eccv_caption 0.1.0 | {t_dicts:.2f} | {t_metrics:.2f} | {t_eccv:.2f} | "
    f"{t_eccv / warm:.1f}x |"
  )
  print(
    f"| jitr (first call, incl. jit compile) | – | {cold:.2f} | {cold:.2f} | {t_eccv / cold:.1f}x |"
  )
  print(f"| jitr (warm) | – | {warm:.2f} | {warm:.2f} | 1.0x |")
  print()
  print(f"Same numbers: {len(diffs)} values compared, max |jitr - eccv_caption| = {max(diffs):.2e}")
  print(
    f"Metrics-only ratio (eccv_caption metrics without building its dicts / jitr warm): "
    f"{t_metrics / warm:.1f}x"
  )
  print()
  print("## jitr's full metric set (adds ranks, recall curves, NDCG@K, NCS/SR, class MAP)")
  print()
  print("| run | seconds |")
  print("|---|---:|")
  print(f"| full set, first call (incl. jit compile) | {full_cold:.2f} |")
  print(f"| full set, warm | {full_warm:.2f} |")
  print(f"| of which the comparable subset above (warm) | {warm:.2f} |")
  print(f"| metrics returned | {len(full)} |")
  print()
  print("## Peak memory (fresh process each, RSS)")
  print()
  print("| problem | inputs (MB) | peak RSS (MB) | peak above inputs (MB) | seconds |")
  print("|---|---:|---:|---:|---:|")
  dense = _child(["--child", "dense"])
  print(
    f"| dense 5,000 x 25,000 (sim + relevance = {dense['matrix_mb']:.0f} MB), full set | "
    f"{dense['inputs_mb']:.0f} | {dense['peak_mb']:.0f} | "
    f"{dense['peak_mb'] - dense['inputs_mb']:.0f} | {dense['seconds']:.1f} |"
  )
  if not args.skip_large:
    n_i, n_c = args.large_images, args.large_captions
    big = _child(
      [
        "--child",
        "embeddings",
        "--large-images",
        str(n_i),
        "--large-captions",
        str(n_c),
        "--dim",
        str(args.dim),
      ]
    )
    print(
      f"| {n_i:,} x {n_c:,} from {args.dim}-d embeddings (dense would be "
      f"{big['dense_would_be_mb']:,.0f} MB), R@K + 1K-style folds + ranks | "
      f"{big['inputs_mb']:.0f} | {big['peak_mb']:.0f} | "
      f"{big['peak_mb'] - big['inputs_mb']:.0f} | {big['seconds']:.1f} |"
    )
  print()


if __name__ == "__main__":
  main()
