#!/usr/bin/env python
"""Benchmark: where the saturation window pays, on trained models' scores.

Smooth-NDCG's windowed ranks (``window=True``) sum each candidate's sigmoids only over the
candidates within ``ln(N·2²⁴)·τ`` of its score; the rest add exactly 0 or 1. How much
that saves depends on how the scores spread, so this script measures it on the scores a
trained model gives: for each workdir, its best checkpoint scores the test split, and the
``N × N`` block of each image against its first caption (a batch as the train step sees
it, N = the split's images, or ``--n``) is ranked both ways. It prints, beside scores drawn
uniformly from [-1, 1] at the same N:

* the share of (query, candidate) pairs within the saturation width (what the window
  sums; the full loss sums them all),
* the widest run of one item's unsaturated partners (the walk of a block of rows lasts
  as long as its widest run on either side),
* triplet + Smooth-NDCG, forward and backward, with and without the window, and the ratio.

Usage: python scripts/bench_window.py WORKDIR [WORKDIR ...] [--n 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # jitr from this checkout, installed or not
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_losses import _time as best_time  # noqa: E402

TEMPERATURE = 0.01


def trained_block(workdir: str, n: int | None):
  """The test split's ``[N, N]`` scores of each image against its first caption under
  ``workdir``'s best checkpoint (the first ``n`` images when given)."""
  import numpy as np

  from jitr.experiment.evaluate import load_member, restore_member
  from jitr.experiment.evaluator import Evaluator

  member = load_member(workdir)
  model, state = restore_member(member, "best")
  data = member.data
  evaluator = Evaluator(
    model, data.splits, data.exact, data.folds, batch_size=member.config.eval_batch_size
  )
  sim = np.asarray(evaluator.similarity("test", state.variables))
  owners = data.splits["test"].caption_image
  first = np.array([np.flatnonzero(owners == i)[0] for i in range(sim.shape[0])])
  block = sim[:, first]
  return block if n is None else block[:n, :n]


def spread(sim) -> dict:
  """The unsaturated share of pairs and the widest one-sided run, both directions."""
  import jax
  import numpy as np

  from jitr import losses
  from jitr.losses.saturation_window import saturation

  count = jax.jit(jax.vmap(lambda s: losses.unsaturated_partners(s, temperature=TEMPERATURE)))
  n = sim.shape[1]
  partners = [np.asarray(count(m)) for m in (sim, sim.T)]
  width = saturation(n) * TEMPERATURE
  runs = []
  for m in (sim, sim.T):
    ordered = np.sort(np.asarray(m), axis=1)
    above = np.stack([np.searchsorted(row, row + width, side="right") for row in ordered])
    below = np.stack([np.searchsorted(row, row - width, side="left") for row in ordered])
    position = np.arange(n)[None, :]
    runs.append(max(int((above - position - 1).max()), int((position - below).max())))
  return {
    "unsaturated": sum(float(p.sum()) for p in partners) / (2 * sim.size * (n - 1)),
    "widest_run": max(runs),
  }


def time_both(sim, repeats: int) -> dict:
  """Best-of-``repeats`` seconds of triplet + Smooth-NDCG's value and gradient, full and
  windowed, on ``sim`` with uniform relevance (positives 1)."""
  import jax
  import jax.numpy as jnp
  import numpy as np

  from jitr import losses

  n = sim.shape[0]
  relevance = np.random.default_rng(0).uniform(0, 1, (n, n)).astype(np.float32)
  np.fill_diagonal(relevance, 1.0)
  args = (jnp.asarray(sim, jnp.float32), jnp.asarray(relevance))
  out = {}
  for window in (False, True):

    def loss(s, r, window=window):
      sndcg = losses.smooth_ndcg(s, r, temperature=TEMPERATURE, window=window)
      return losses.triplet(s) + sndcg

    out["window" if window else "full"] = best_time(
      jax.jit(jax.value_and_grad(loss)), args, repeats
    )
  return out


def row(label: str, sim, repeats: int) -> str:
  """One table row of ``sim``'s spread and timings."""
  s, t = spread(sim), time_both(sim, repeats)
  return (
    f"| {label} | {sim.shape[0]:,} | {s['unsaturated']:.1%} | {s['widest_run']:,} "
    f"| {1e3 * t['full']:.3f} | {1e3 * t['window']:.3f} | {t['full'] / t['window']:.2f}× |"
  )


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("workdirs", nargs="+", help="jitr-train workdirs with a best checkpoint")
  parser.add_argument("--n", type=int, default=None, help="images (and captions) of the block")
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args()
  import jax
  import numpy as np

  print(
    f"jax {jax.__version__} on {jax.devices()[0].device_kind}, {os.cpu_count()} CPU cores, "
    f"τ = {TEMPERATURE}; best of {args.repeats}; triplet (LMH) + Smooth-NDCG, both directions, "
    "forward and backward"
  )
  print(
    "| scores | N | unsaturated pairs | widest run | full ms | window ms | full / window |\n"
    "|---|---|---|---|---|---|---|"
  )
  n = None
  for workdir in args.workdirs:
    sim = trained_block(workdir, args.n)
    n = sim.shape[0]
    print(row(os.path.basename(os.path.normpath(workdir)), sim, args.repeats), flush=True)
  uniform = np.random.default_rng(0).uniform(-1, 1, (n, n)).astype(np.float32)
  print(row("uniform in [-1, 1]", uniform, args.repeats), flush=True)


if __name__ == "__main__":
  main()
