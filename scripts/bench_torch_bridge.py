#!/usr/bin/env python
"""Benchmark: a PyTorch training step with Listwise ITR's loss in PyTorch vs through jitr.torch.

One step = a small linear dual encoder (image features -> D, caption features -> D,
L2-normalised) forward, the triplet + Smooth-NDCG loss, backward, SGD update. The
PyTorch loss is Listwise ITR's ``TripletSNDCGLoss`` written from its code (the
``[N, N, N]`` pairwise differences, by broadcasting instead of ``repeat``); the bridged
one is :class:`jitr.torch.TripletSNDCGLoss` (jitr's jitted JAX loss, tensors by
DLPack). Both run side by side in this process for each N (median of ``--repeats``
steps after a warm-up). The bridge's overhead per call is its time for ``loss +
backward`` on a fixed ``sim`` minus the same jitted JAX value-and-grad called directly
on JAX arrays (fastest of interleaved calls).

Usage: python scripts/bench_torch_bridge.py [--sizes 128,256,512] [--with_1024] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # jitr from this checkout, installed or not

IMG_DIM, TXT_DIM, EMBED, SENT_DIM, REFS = 512, 300, 256, 384, 5
OPT = types.SimpleNamespace(margin=0.2, tau=0.01, sndcg_weight=0.5, batch_size=0)


def reference_loss(v, t, v_text_emb, t_text_emb, margin, tau, w):
  """Listwise ITR's ``TripletSNDCGLoss.forward`` (official orientation), loss only."""
  import torch

  n = v.size(0)
  scores = v.mm(t.t())
  pos = scores.diag().view(n, 1)
  pos_mask = torch.eye(n)
  neg_mask = 1 - pos_mask
  refs = torch.nn.functional.normalize(v_text_emb.transpose(0, 1), dim=2)
  caps = torch.nn.functional.normalize(t_text_emb, dim=1)
  relevance = torch.bmm(refs, caps.unsqueeze(0).expand(REFS, -1, -1).transpose(1, 2)).max(0)[0]
  relevance = (1 + relevance) / 2 * neg_mask + pos_mask
  loss_t = ((scores - pos + margin).clamp(min=0) * neg_mask).max(1)[0].mean()
  loss_v = ((scores - pos.t() + margin).clamp(min=0) * neg_mask).max(0)[0].mean()
  pairwise = (loss_t + loss_v) / 2

  def ranks_above(x):
    return ((x[:, None, :] - x[:, :, None]) > 0).float().sum(-1) + 1

  gains = 2**relevance - 1
  idcg = (gains / torch.log2(1 + ranks_above(relevance))).sum(-1)

  def direction(s):
    diff = s[:, None, :] - s[:, :, None]
    sig = 1.0 / (1.0 + torch.exp(torch.clamp(-diff / tau, min=-50, max=50)))
    rank = (sig * neg_mask).sum(-1) + 1
    return (1 - (gains / torch.log2(1 + rank)).sum(-1) / idcg).mean()

  listwise = (direction(scores) + direction(scores.t())) / 2
  return (1 - w) * pairwise + w * listwise


def _median_ms(fn, repeats: int) -> float:
  fn()  # warm-up (and the bridge's compile)
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
  return 1e3 * statistics.median(times)


def _step_fn(n: int, loss_fn):
  """A training step of a fresh linear dual encoder on a fixed random batch."""
  import torch

  gen = torch.Generator().manual_seed(n)
  img_enc, txt_enc = torch.nn.Linear(IMG_DIM, EMBED), torch.nn.Linear(TXT_DIM, EMBED)
  params = [*img_enc.parameters(), *txt_enc.parameters()]
  optimizer = torch.optim.SGD(params, lr=0.01)
  images, captions = torch.randn(n, IMG_DIM, generator=gen), torch.randn(n, TXT_DIM, generator=gen)
  refs = torch.randn(n, REFS, SENT_DIM, generator=gen)
  caps = torch.randn(n, SENT_DIM, generator=gen)

  def step():
    optimizer.zero_grad()
    v = torch.nn.functional.normalize(img_enc(images), dim=1)
    t = torch.nn.functional.normalize(txt_enc(captions), dim=1)
    loss = loss_fn(v, t, refs, caps)
    loss.backward()
    optimizer.step()

  return step


def _overhead_ms(n: int, repeats: int) -> tuple[float, float]:
  """(bridge loss + backward, the same jitted JAX value-and-grad called directly): the
  fastest of ``repeats`` interleaved calls each, in ms."""
  import jax
  import torch

  from jitr.torch import bridge, triplet_sndcg

  gen = torch.Generator().manual_seed(0)
  sim = (torch.rand(n, n, generator=gen) * 2 - 1).requires_grad_(True)
  refs, caps = torch.randn(n, REFS, SENT_DIM, generator=gen), torch.randn(n, SENT_DIM)
  hyper = dict(
    margin=OPT.margin, temperature=OPT.tau, sndcg_weight=OPT.sndcg_weight, orientation="official"
  )

  def bridged():
    bridge.loss(triplet_sndcg, sim, refs, caps, **hyper)[0].backward()

  direct_fn = jax.jit(
    jax.value_and_grad(lambda s, r, c: triplet_sndcg(s, r, c, **hyper), has_aux=True)
  )
  arrays = [bridge.to_jax(x) for x in (sim, refs, caps)]

  def direct():
    jax.block_until_ready(direct_fn(*arrays))

  bridged(), direct()  # compile both
  times = {bridged: [], direct: []}
  for _ in range(repeats):  # interleaved, so load changes hit both alike
    for fn, out in times.items():
      start = time.perf_counter()
      fn()
      out.append(time.perf_counter() - start)
  return 1e3 * min(times[bridged]), 1e3 * min(times[direct])


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sizes", default="128,256,512")
  parser.add_argument(
    "--with_1024", action="store_true", help="also N = 1024 (4 GB per [N, N, N] tensor)"
  )
  parser.add_argument("--repeats", type=int, default=5)
  args = parser.parse_args()
  sizes = [int(s) for s in args.sizes.split(",")] + ([1024] if args.with_1024 else [])

  import torch

  from jitr.torch import TripletSNDCGLoss

  print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs")
  header = "| N | PyTorch loss step (ms) | jitr.torch step (ms) | PyTorch / jitr.torch |"
  header += " bridge call (ms) | direct JAX (ms) | overhead per call (ms) |"
  print(header)
  print("|" + "---|" * 7)
  for n in sizes:

    def torch_loss(v, t, r, c):
      return reference_loss(v, t, r, c, OPT.margin, OPT.tau, OPT.sndcg_weight)

    opt = types.SimpleNamespace(**{**vars(OPT), "batch_size": n})
    bridged = TripletSNDCGLoss(opt, orientation="official")
    t_ref = _median_ms(_step_fn(n, torch_loss), args.repeats)
    t_jitr = _median_ms(_step_fn(n, lambda *xs, fn=bridged: fn(*xs)[0]), args.repeats)
    call, direct = _overhead_ms(n, max(args.repeats, 7))
    print(
      f"| {n} | {t_ref:.1f} | {t_jitr:.1f} | {t_ref / t_jitr:.2f}x | {call:.1f} | {direct:.1f} |"
      f" {call - direct:.2f} |",
      flush=True,
    )


if __name__ == "__main__":
  main()
