#!/usr/bin/env python
"""Benchmark: what Listwise ITR's loss adds to a VSE∞ train step (its Table VIII: training
time per epoch of VSE∞ and of VSE∞ + Listwise), jitr's ratio beside the paper's.

Two jitr train steps of VSE∞ (BUTD regions + BERT, batch 128, AdamW with BERT at 0.1×,
clipping at 2; ``scripts/bench_vseinf.py``'s model and batch), after the warm-up epoch:

* ``VSE∞``: the max-violation triplet (margin 0.2, both directions);
* ``+ Listwise``: the same triplet plus Smooth-NDCG (τ 0.01) on RSC relevance, ``(1 +
  max_k cos(T_i^k, T_j)) / 2`` from each caption's 384-d sentence vector and its image's
  five reference vectors (the ``vectors:sentence`` source ``configs/default.py`` trains on).

Both are compiled first, then timed in interleaved rounds (``--rounds`` of ``--steps`` each,
so load from anything else on the machine hits both alike). The table prints the median
ms/step, the seconds an epoch of Flickr30K takes at that rate (its full batches: 1,132 of
128)
and the ratio ``+ Listwise / VSE∞`` beside the paper's (241.9 s / 229.6 s = 1.054 on an
RTX 3090). The ratio is what carries over between machines; the epoch time is the step
alone (no input pipeline, no validation).

Usage::

    python scripts/bench_listwise_epoch.py --bert_layers 2 --batch 32   # a CPU run
    python scripts/bench_listwise_epoch.py                              # BERT-base, on a GPU
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PAPER = {"VSE∞": 229.6, "+ Listwise": 241.9}  # Table VIII, seconds per epoch (RTX 3090)
F30K_CAPTIONS = 145_000  # an epoch of Flickr30K: its full batches of these pairs
SENTENCE_DIM = 384  # all-MiniLM-L6-v2's vectors
TRIPLET = {"triplet": {"weight": 1.0, "mining": "max", "margin": 0.2}}
LISTWISE = {**TRIPLET, "smooth_ndcg": {"weight": 1.0, "temperature": 0.01}}


def with_sentence_vectors(batch: dict, references: int = 5) -> dict:
  """``batch`` with unit sentence vectors of each caption and of its image's references."""
  from jitr.data.batch_keys import vectors_keys

  rng = np.random.default_rng(1)
  n = len(batch["tokens"])
  refs = rng.standard_normal((n, references, SENTENCE_DIM)).astype(np.float32)
  refs /= np.linalg.norm(refs, axis=-1, keepdims=True)
  caption_key, references_key = vectors_keys("sentence")
  return {**batch, caption_key: refs[:, 0], references_key: refs}


def compiled_step(args, batch, terms):
  """``(compiled step, its first state)``: jitr's VSE∞ train step with the loss ``terms``
  (Smooth-NDCG reads the in-batch RSC of ``vectors:sentence``)."""
  import jax
  from bench_vseinf import jitr_settings, optimizer_group

  from jitr import losses, training
  from jitr.models.registry import make_model
  from jitr.training.graded import make_graded_fn

  model = make_model(jitr_settings(args, remat=False), args.vocab)
  variables = model.init(jax.random.key(0), {k: v[:2] for k, v in batch.items()})
  tx = training.make_optimizer(optimizer_group(), steps_per_epoch=1000)
  state = training.create_train_state(variables, tx, jax.random.key(1))
  graded_fn = None
  if "smooth_ndcg" in terms:
    graded_fn = make_graded_fn({"relevance": "vectors:sentence"}, aggregates={"sentence": "max"})
  step = training.make_train_step(
    losses.objective(terms), model=model, graded_fn=graded_fn, axis_name=None
  )
  return jax.jit(step, donate_argnums=(0,)).lower(state, batch).compile(), state


def main(argv=None) -> None:
  import jax
  from bench_vseinf import make_batch, parse_args

  args = parse_args(argv)
  batch = jax.device_put(with_sentence_vectors(make_batch(args)))
  runners = {}
  for name, terms in (("VSE∞", TRIPLET), ("+ Listwise", LISTWISE)):
    step, state = compiled_step(args, batch, terms)
    for _ in range(args.warmup):
      state, metrics = step(state, batch)
      jax.block_until_ready(metrics["loss"])
    # each step computes what it is named for (the terms' losses are logged)
    assert ("loss/smooth_ndcg" in metrics) == ("smooth_ndcg" in terms), sorted(metrics)
    runners[name] = [step, state, []]
  for _ in range(args.rounds):
    for runner in runners.values():
      step, state, times = runner
      for _ in range(args.steps):
        t0 = time.perf_counter()
        state, metrics = step(state, batch)
        jax.block_until_ready(metrics["loss"])
        times.append(time.perf_counter() - t0)
      runner[1] = state
  ms = {name: 1000 * statistics.median(r[2]) for name, r in runners.items()}
  device = jax.devices()[0]
  print(
    f"VSE∞ train step, batch {args.batch}, BERT {args.bert_layers} × {args.bert_hidden}, "
    f"{device.platform} ({device.device_kind}); median of {args.rounds * args.steps} steps"
  )
  print("| model | ms/step | s per Flickr30K epoch | paper's s per epoch |")
  print("|---|---:|---:|---:|")
  for name, value in ms.items():
    epoch_s = value * (F30K_CAPTIONS // args.batch) / 1000
    print(f"| {name} | {value:.1f} | {epoch_s:.1f} | {PAPER[name]} |")
  ratio, paper = ms["+ Listwise"] / ms["VSE∞"], PAPER["+ Listwise"] / PAPER["VSE∞"]
  print(f"\n+ Listwise / VSE∞: jitr {ratio:.3f}, paper {paper:.3f}")


if __name__ == "__main__":
  main()
