#!/usr/bin/env python
"""Benchmark of the relevance estimators, measured side by side in one run.

1. CIDEr-D pairs per second, jitr vs pycocoevalcap on the same (already
   tokenized) Flickr8k pairs of an images x captions grid, with the largest
   relative difference of the values, and jitr on a list of arbitrary pairs;
2. the time to score every Flickr8k image x caption pair with CIDEr-D, keeping
   the top-100 captions per image (target: <= 10 minutes on 2 cores);
3. Sentence-Transformers (all-MiniLM-L6-v2) captions embedded per second;
4. the token-coverage fit (``tokens``) on the first N captions, each in its own process:
   holding every token vector (one model pass) vs streaming (at most ``max_fit_tokens``
   held, two passes): fit seconds and the peak memory the fit adds.

  .venv/bin/python scripts/bench_relevance.py --flickr8k=$FLICKR8K \
      [--grid_images=200 --grid_captions=1000] [--skip_full] [--sentence_captions=2000] \
      [--tokens_captions=8000 --tokens_max_fit=20000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from jitr.relevance.captions_io import read_flickr8k_tokens  # noqa: E402
from jitr.relevance.cider import cider_d  # noqa: E402
from jitr.relevance.cider_estimator import CiderEstimator  # noqa: E402
from jitr.relevance.tokenize import ptb_tokenize  # noqa: E402


def bench_pairs(
  cs, n_images: int, n_captions: int, coco_rounds: int
) -> tuple[list[tuple[str, str, str]], float]:
  """Grid of n_images reference sets x n_captions candidates (SAM's phi(G_p, c) for many c).

  pycocoevalcap scores one candidate per image per ``compute_score`` call, so it runs
  ``coco_rounds`` calls over the same ``gts`` (same idf) on pairs of the grid; jitr
  scores the whole grid (fit + encode + score) and is compared on those pairs.
  """
  from pycocoevalcap.cider.cider import Cider

  from jitr.relevance.cider import CiderD

  rng = np.random.default_rng(0)
  images = rng.choice(cs.num_images, n_images, replace=False)
  cap_idx = rng.choice(cs.num_captions, n_captions, replace=False)
  refs = [[ptb_tokenize(c) for c in cs.references(i)] for i in images]
  cands = [ptb_tokenize(cs.captions[j]) for j in cap_idx]

  t0 = time.perf_counter()
  scorer = CiderD().fit(refs)
  flat = [r for rs in refs for r in rs]
  offsets = np.concatenate([[0], np.cumsum([len(r) for r in refs])])
  grid = np.concatenate(
    [
      blk
      for _, _, blk in scorer.score_blocks(scorer.encode(cands), scorer.encode(flat), offsets, 64)
    ],
    axis=1,
  )
  t_grid = time.perf_counter() - t0
  grid_pairs = n_images * n_captions

  gts = {k: refs[k] for k in range(n_images)}
  t0 = time.perf_counter()
  worst = 0.0
  for r in range(coco_rounds):
    cols = (np.arange(n_images) * 7 + r) % n_captions
    _, ref_scores = Cider().compute_score(gts, {k: [cands[cols[k]]] for k in range(n_images)})
    ours = grid[cols, np.arange(n_images)]
    worst = max(
      worst, float(np.max(np.abs(ours - ref_scores) / np.maximum(np.abs(ref_scores), 1e-12)))
    )
  t_coco = time.perf_counter() - t0
  coco_rate = coco_rounds * n_images / t_coco

  # an arbitrary list of (reference set, candidate) pairs, idf from those sets
  n_list = 20000
  ii, jj = rng.integers(0, cs.num_images, n_list), rng.integers(0, cs.num_captions, n_list)
  list_refs = [[ptb_tokenize(c) for c in cs.references(i)] for i in ii]
  list_cands = [ptb_tokenize(cs.captions[j]) for j in jj]
  t0 = time.perf_counter()
  cider_d(list_cands, list_refs)
  t_list = time.perf_counter() - t0
  return [
    (
      f"CIDEr-D, pycocoevalcap ({coco_rounds} calls x {n_images} pairs of the grid)",
      f"{coco_rate:,.0f} pairs/s",
      "1x",
    ),
    (
      f"CIDEr-D, jitr {n_images} images x {n_captions} captions grid (fit+encode+score)",
      f"{grid_pairs / t_grid:,.0f} pairs/s",
      f"{grid_pairs / t_grid / coco_rate:,.0f}x (target >= 100x)",
    ),
    (
      f"CIDEr-D, jitr cider_d on a list of {n_list} arbitrary pairs",
      f"{n_list / t_list:,.0f} pairs/s",
      f"{n_list / t_list / coco_rate:,.1f}x",
    ),
    ("  max relative difference jitr vs pycocoevalcap", f"{worst:.1e}", "<= 1e-6"),
  ], coco_rate


def bench_full(cs, top_k: int, coco_rate: float) -> list[tuple[str, str, str]]:
  t0 = time.perf_counter()
  est = CiderEstimator().fit(cs)
  t_fit = time.perf_counter() - t0
  t0 = time.perf_counter()
  top = est.top_k(np.arange(cs.num_images), top_k)
  t_score = time.perf_counter() - t0
  pairs = cs.num_images * cs.num_captions
  total = t_fit + t_score
  assert top.indices.shape == (cs.num_images, top_k)
  return [
    (
      f"CIDEr-D all {cs.num_images} x {cs.num_captions} pairs, top-{top_k}",
      f"{total / 60:.2f} min (fit {t_fit:.0f} s + score {t_score:.0f} s)",
      "target <= 10 min",
    ),
    (
      "  = jitr all-pairs rate",
      f"{pairs / t_score:,.0f} pairs/s",
      f"{pairs / t_score / coco_rate:,.0f}x pycocoevalcap",
    ),
    ("  pycocoevalcap at its rate would take", f"{pairs / coco_rate / 3600:,.1f} h", ""),
  ]


def bench_sentence(cs, n: int, batch_size: int) -> list[tuple[str, str, str]]:
  from jitr.relevance.sentence import SentenceEstimator

  est = SentenceEstimator(show_progress=False, batch_size=batch_size)
  est.embed(list(cs.captions[:batch_size]))  # load + warm up
  caps = list(cs.captions[batch_size : batch_size + n])
  t0 = time.perf_counter()
  est.embed(caps)
  dt = time.perf_counter() - t0
  return [
    (
      f"sentence embeddings (all-MiniLM-L6-v2, CPU, batch {batch_size})",
      f"{len(caps) / dt:,.0f} captions/s",
      "",
    )
  ]


def tokens_fit_child(flickr8k: str, n: int, max_fit_tokens: int) -> None:
  """Fit ``tokens`` on the first n captions; print JSON: seconds, the tokens, the peak RSS
  (MiB) before and after the fit (the model loaded and warm before)."""
  import json
  import resource

  from jitr.relevance.token_coverage import TokenCoverageEstimator, TokenCoverageSettings

  cs = read_flickr8k_tokens(os.path.join(flickr8k, "Flickr8k.token.txt"))
  images = int(np.searchsorted(cs.image_offsets, n, side="right")) - 1  # whole images only
  sub = cs.subset(range(images))
  n = sub.num_captions
  est = TokenCoverageEstimator(TokenCoverageSettings(max_fit_tokens=max_fit_tokens))
  est.tokens(list(cs.captions[-64:]))  # load + warm up
  peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # noqa: E731
  before = peak()
  t0 = time.perf_counter()
  est.fit(sub)
  seconds = time.perf_counter() - t0
  tokens = sum(len(i) for i in est._token_ids(list(sub.captions)))
  print(
    json.dumps(
      {
        "seconds": seconds,
        "captions": n,
        "tokens": tokens,
        "before_mib": before,
        "after_mib": peak(),
      }
    )
  )


def bench_tokens(flickr8k: str, n: int, max_fit_tokens: int) -> list[tuple[str, str, str]]:
  import json
  import subprocess

  runs = {}
  for label, limit in (("holding every token", 10**9), ("streamed", max_fit_tokens)):
    cmd = [sys.executable, __file__, f"--flickr8k={flickr8k}", f"--tokens_child={n}:{limit}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
      raise RuntimeError(f"tokens fit ({label}) failed:\n{done.stderr[-2000:]}")
    runs[label] = json.loads(done.stdout.strip().splitlines()[-1])
  held = runs["holding every token"]
  rows = []
  for label, r in runs.items():
    added = r["after_mib"] - r["before_mib"]
    rows.append(
      (
        f"tokens fit, {r['captions']:,} captions ({r['tokens']:,} tokens), {label}"
        + ("" if r is held else f" (max_fit_tokens {max_fit_tokens:,})"),
        f"{r['seconds']:.0f} s, +{added:,.0f} MiB peak",
        "1×" if r is held else f"{r['seconds'] / held['seconds']:.2f}× time",
      )
    )
  return rows


def main() -> None:
  parser = argparse.ArgumentParser(
    description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
  )
  parser.add_argument(
    "--flickr8k",
    default=os.environ.get("FLICKR8K") or os.environ.get("JITR_FLICKR8K"),
    help="the Flickr8k text package's folder (default: $FLICKR8K, then $JITR_FLICKR8K)",
  )
  parser.add_argument("--grid_images", type=int, default=200)
  parser.add_argument("--grid_captions", type=int, default=1000)
  parser.add_argument("--coco_rounds", type=int, default=10)
  parser.add_argument("--top_k", type=int, default=100)
  parser.add_argument("--skip_full", action="store_true")
  parser.add_argument("--sentence_captions", type=int, default=2000)
  parser.add_argument("--batch_size", type=int, default=128)
  parser.add_argument("--tokens_captions", type=int, default=8000, help="0: skip")
  parser.add_argument("--tokens_max_fit", type=int, default=20000)
  parser.add_argument("--tokens_child", default="", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if not args.flickr8k:
    parser.error("--flickr8k: the Flickr8k text package's folder (or set $FLICKR8K)")
  if args.tokens_child:
    n, limit = args.tokens_child.split(":")
    tokens_fit_child(args.flickr8k, int(n), int(limit))
    return

  cs = read_flickr8k_tokens(os.path.join(args.flickr8k, "Flickr8k.token.txt"))
  print(
    f"Flickr8k: {cs.num_images} images, {cs.num_captions} captions; {os.cpu_count()} CPUs visible\n"
  )
  rows, coco_rate = bench_pairs(cs, args.grid_images, args.grid_captions, args.coco_rounds)
  if not args.skip_full:
    rows += bench_full(cs, args.top_k, coco_rate)
  if args.sentence_captions:
    rows += bench_sentence(cs, args.sentence_captions, args.batch_size)
  if args.tokens_captions:
    rows += bench_tokens(args.flickr8k, args.tokens_captions, args.tokens_max_fit)
  print("| measurement | value | ratio / target |")
  print("|---|---:|---|")
  for name, value, ratio in rows:
    print(f"| {name} | {value} | {ratio} |")


if __name__ == "__main__":
  main()
