#!/usr/bin/env python
"""Benchmark: jitr's triplet + Smooth-NDCG (both directions) vs a naive version, and
Smooth-NDCG@M (``top_m``, default 64) and the windowed full loss beside the full loss.

The naive version materialises the ``[N, N, N]`` pairwise tensor and
differentiates it with plain autodiff, the way the official PyTorch code works.
Each (implementation, N) runs in its own subprocess so its peak memory is its own
(peak RSS on CPU, the device's peak bytes in use on a GPU).
The naive version is skipped (and said so) where XLA's own estimate of its
memory exceeds ``--naive_budget_gb``.

Smooth-NDCG@M ranks each query's M candidates of the largest gains among all N (N·M·N
pairs instead of N³); it runs on the same dense relevance as the full loss (there a
change of objective, the same cost as on top-K relevance).

The windowed loss (``window=True``) is the full loss, each query's scores sorted and each
candidate's sigmoids summed over its unsaturated neighbours only; its cost follows how
many pairs lie within the saturation width ``ln(N·2²⁴)·τ`` (the "unsaturated" column: their
share of all pairs, on these uniform scores in [-1, 1]).

Usage: python scripts/bench_losses.py [--sizes 128,256,512,1024] [--repeats 3] [--top_m 64]

On a GPU, large N compile in seconds with XLA's autotuner off (with it on, N = 2048 and
4096 did not compile in minutes on an H100; the loss has no matrix product to tune):
``python scripts/bench_losses.py --sizes 1024,2048,4096,8192
--naive_budget_gb 40 --xla_flags=--xla_gpu_autotune_level=0``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # jitr from this checkout, installed or not

TEMPERATURE = 0.01
TOP_M = 64  # Smooth-NDCG@M's M (--top_m)


def _peak_mb() -> float:
  """Peak memory of this process: the device's peak bytes in use on a GPU / TPU, the
  peak RSS (VmHWM) on CPU."""
  import jax

  if jax.default_backend() != "cpu":
    return jax.devices()[0].memory_stats()["peak_bytes_in_use"] / 2**20
  with open("/proc/self/status") as f:
    for line in f:
      if line.startswith("VmHWM:"):
        return int(line.split()[1]) / 1024.0
  return float("nan")


def _naive_loss(sim, relevance):
  """Triplet (LMH) + Smooth-NDCG written the obvious way: [N, N, N] pairwise terms."""
  import jax
  import jax.numpy as jnp

  def triplet_direction(s):
    n = s.shape[0]
    diag = jnp.diag(s)
    cost = jnp.where(jnp.eye(n, dtype=bool), 0.0, jax.nn.relu(0.2 + s - diag[:, None]))
    return jnp.mean(jnp.max(cost, axis=1))

  def sndcg_direction(s, r):
    n = s.shape[1]
    pairwise = jax.nn.sigmoid((s[:, None, :] - s[:, :, None]) / TEMPERATURE)  # [Q, j, k]
    ranks = 1.0 + jnp.sum(jnp.where(jnp.eye(n, dtype=bool)[None], 0.0, pairwise), axis=-1)
    gains = jnp.exp2(r) - 1.0
    dcg = jnp.sum(gains / jnp.log2(1.0 + ranks), axis=-1)
    ideal = jnp.sort(gains, axis=-1)[:, ::-1]
    idcg = jnp.sum(ideal / jnp.log2(2.0 + jnp.arange(n)), axis=-1)
    return jnp.mean(1.0 - dcg / idcg)

  return (
    triplet_direction(sim)
    + triplet_direction(sim.T)
    + sndcg_direction(sim, relevance)
    + sndcg_direction(sim.T, relevance.T)
  )


def _jitr_loss(sim, relevance):
  from jitr import losses

  return losses.triplet(sim) + losses.smooth_ndcg(sim, relevance, temperature=TEMPERATURE)


def _jitr_loss_at(top_m: int):
  """jitr's loss with Smooth-NDCG@``top_m``."""
  from jitr import losses

  def loss(sim, relevance):
    at = losses.smooth_ndcg(sim, relevance, temperature=TEMPERATURE, top_m=top_m)
    return losses.triplet(sim) + at

  return loss


def _jitr_loss_window(sim, relevance):
  """jitr's loss with the windowed Smooth-NDCG (the same value)."""
  from jitr import losses

  return losses.triplet(sim) + losses.smooth_ndcg(
    sim, relevance, temperature=TEMPERATURE, window=True
  )


def unsaturated_share(sim) -> float:
  """The share of (query, candidate) pairs of ``sim``'s rows within the saturation width."""
  import jax

  from jitr import losses

  count = jax.jit(jax.vmap(lambda s: losses.unsaturated_partners(s, temperature=TEMPERATURE)))
  return float(count(sim).sum()) / sim.size / (sim.shape[1] - 1)


def _time(fn, args, repeats):
  import jax

  jax.block_until_ready(fn(*args))
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    best = min(best, time.perf_counter() - start)
  return best


def fused_rank_pass_rate(n: int = 1024, block: int = 8, op: str = "sigmoid") -> float:
  """G pairs/s of the bare forward rank pass ``Σ_j σ((s_j − s_i)/τ)`` over an
  ``[n, n]`` matrix (rows ``block`` at a time): the reference per-pair cost. With
  ``op="exp"`` the pass is ``Σ_j exp((s_j − s_i)/τ)``: one exponential per pair and
  nothing else, the rate no sigmoid-per-pair loss can beat on this device."""
  import jax
  import jax.numpy as jnp
  import numpy as np

  sim = jnp.asarray(np.random.default_rng(0).uniform(-1, 1, (n, n)), jnp.float32)
  fn_of_pair = {"sigmoid": jax.nn.sigmoid, "exp": jnp.exp}[op]
  row = lambda s: jnp.sum(fn_of_pair((s[None, :] - s[:, None]) / TEMPERATURE), axis=-1)
  fn = jax.jit(lambda m: jax.lax.map(row, m, batch_size=block))
  return n**3 / _time(fn, (sim,), 3) / 1e9


def run_one(impl: str, n: int, repeats: int, budget_gb: float, top_m: int = TOP_M) -> dict:
  import jax
  import jax.numpy as jnp
  import numpy as np

  rng = np.random.default_rng(0)
  sim = jnp.asarray(rng.uniform(-1, 1, (n, n)), jnp.float32)
  relevance = jnp.asarray(rng.uniform(0, 1, (n, n)), jnp.float32)
  relevance = relevance.at[jnp.diag_indices(n)].set(1.0)
  loss = {
    "jitr": _jitr_loss,
    "naive": _naive_loss,
    "at_m": _jitr_loss_at(top_m),
    "window": _jitr_loss_window,
  }[impl]
  fwd = jax.jit(loss)
  fwd_bwd = jax.jit(jax.value_and_grad(loss))
  compiled = fwd_bwd.lower(sim, relevance).compile()
  analysis = compiled.memory_analysis()
  estimate_gb = (
    analysis.temp_size_in_bytes + analysis.argument_size_in_bytes + analysis.output_size_in_bytes
  ) / 2**30
  if impl == "naive" and estimate_gb > budget_gb:  # the budget is the naive version's
    return {"impl": impl, "n": n, "skipped": f"needs ~{estimate_gb:.1f} GB (XLA estimate)"}
  t_fwd = _time(fwd, (sim, relevance), repeats)
  t_fwd_bwd = _time(fwd_bwd, (sim, relevance), repeats)
  out = {
    "impl": impl,
    "n": n,
    "fwd_s": t_fwd,
    "fwd_bwd_s": t_fwd_bwd,
    "xla_estimate_gb": estimate_gb,
    "peak_mb": _peak_mb(),
  }
  if impl == "window":
    out["unsaturated"] = (unsaturated_share(sim) + unsaturated_share(sim.T)) / 2
  return out


def _run_impl(impl: str, n: int, args) -> dict:
  """One (implementation, N) in its own process: its result, or ``{"failed": why}`` (the
  error's last line, e.g. XLA's out-of-memory at compile time, or the time limit)."""
  cmd = [sys.executable, __file__, "--one", impl, str(n), "--repeats", str(args.repeats)]
  cmd += ["--naive_budget_gb", str(args.naive_budget_gb), "--top_m", str(args.top_m)]
  try:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout_s)
  except subprocess.TimeoutExpired:
    return {"failed": f"over --timeout_s={args.timeout_s:g} s (compile included)"}
  if out.returncode != 0:
    lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()] or ["no output"]
    return {"failed": lines[-1][:160].replace("|", "/")}
  return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sizes", default="128,256,512,1024")
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--naive_budget_gb", type=float, default=8.0)
  parser.add_argument(
    "--timeout_s", type=float, default=None, help="limit of each (implementation, N) process"
  )
  parser.add_argument(
    "--xla_flags", default=None, help="extra XLA_FLAGS of every run (its processes inherit them)"
  )
  parser.add_argument(
    "--reference_n",
    type=int,
    default=1024,
    help="N of the fused reference passes (a GPU needs a large N to fill, e.g. 8192)",
  )
  parser.add_argument("--top_m", type=int, default=TOP_M, help="M of Smooth-NDCG@M")
  parser.add_argument("--one", nargs=2, metavar=("IMPL", "N"), help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.one:
    if args.one[0] in ("sigmoid", "exp"):
      rate = fused_rank_pass_rate(int(args.one[1]), op=args.one[0])
      print(json.dumps({"rate": rate}))
    else:
      result = run_one(
        args.one[0], int(args.one[1]), args.repeats, args.naive_budget_gb, args.top_m
      )
      print(json.dumps(result))
    return
  if args.xla_flags:  # before jax is imported; the per-run processes inherit the variable
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + args.xla_flags).strip()

  import jax

  print(
    f"jax {jax.__version__} on {jax.devices()[0].device_kind}, {os.cpu_count()} CPU cores, "
    f"τ = {TEMPERATURE}; best of {args.repeats}; triplet (LMH) + Smooth-NDCG, both directions; "
    f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}"
  )
  rates = {}
  for op in ("sigmoid", "exp"):
    cmd = [sys.executable, __file__, "--one", op, str(args.reference_n)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    rates[op] = json.loads(out.stdout.strip().splitlines()[-1])["rate"]
  kernel = rates["sigmoid"]
  print(
    f"reference: one fused forward rank pass (jax.nn.sigmoid + sum, N = {args.reference_n}) = "
    f"{kernel:.2f} G pairs/s; the same pass with one exp per pair = {rates['exp']:.2f} G pairs/s"
  )
  memory = "RSS" if jax.default_backend() == "cpu" else "device"
  header = (
    "| N | jitr fwd s | fwd G pairs/s | fwd rate / exp pass | jitr fwd+bwd s "
    "| fwd+bwd per-pair cost / fused pass "
    f"| jitr peak {memory} MB "
    f"| naive fwd+bwd s | naive peak {memory} MB | naive / jitr "
    f"| @{args.top_m} fwd+bwd s | full / @{args.top_m} "
    "| window fwd+bwd s | unsaturated | full / window |"
  )
  print(header)
  print("|---" * (header.count("|") - 1) + "|")
  for n in (int(x) for x in args.sizes.split(",")):
    results = {impl: _run_impl(impl, n, args) for impl in ("jitr", "naive", "at_m", "window")}
    j, v, m, w = (results[impl] for impl in ("jitr", "naive", "at_m", "window"))
    pairs = 2 * n**3  # sigmoid pairs of one forward rank pass, both directions
    if "failed" in j:
      print(f"| {n} | jitr failed: {j['failed']} |" + " – |" * 13, flush=True)
      continue
    if "failed" in v:
      naive_cols = f"failed: {v['failed']} | – | –"
    elif "skipped" in v:
      naive_cols = f"skipped: {v['skipped']} | – | –"
    else:
      naive_cols = (
        f"{v['fwd_bwd_s']:.3f} | {v['peak_mb']:.0f} | {v['fwd_bwd_s'] / j['fwd_bwd_s']:.1f}×"
      )
    if "failed" in m:
      at_cols = f"failed: {m['failed']} | –"
    else:
      at_cols = f"{m['fwd_bwd_s']:.3f} | {j['fwd_bwd_s'] / m['fwd_bwd_s']:.1f}×"
    if "failed" in w:
      window_cols = f"failed: {w['failed']} | – | –"
    else:
      window_cols = (
        f"{w['fwd_bwd_s']:.3f} | {w['unsaturated']:.1%} | {j['fwd_bwd_s'] / w['fwd_bwd_s']:.1f}×"
      )
    print(
      f"| {n} | {j['fwd_s']:.3f} | {pairs / j['fwd_s'] / 1e9:.2f} "
      f"| {pairs / j['fwd_s'] / 1e9 / rates['exp']:.2f} | {j['fwd_bwd_s']:.3f} "
      f"| {j['fwd_bwd_s'] / pairs * kernel * 1e9:.2f}× | {j['peak_mb']:.0f} | {naive_cols} "
      f"| {at_cols} | {window_cols} |",
      flush=True,
    )


if __name__ == "__main__":
  main()
