#!/usr/bin/env python
"""Benchmark: per-device cost of the split loss on D = 1, 2, 4, 8 host devices.

The data-parallel train step splits every loss by query rows: device d scores
its own ``b = N/D`` images against all ``N`` gathered captions and its own
captions against all images, and computes only those queries' terms. This
script compiles exactly that loss part (``jitr.training.step.split_loss``:
gather, both ``[b, N]`` score blocks, triplet + Smooth-NDCG, and the gradient
with respect to the device's embeddings) under ``jax.shard_map`` on a
``batch`` mesh, and prints from XLA's compiled per-device program:

* FLOPs and bytes accessed (``compiled.cost_analysis()``),
* peak memory: arguments + outputs + temporaries (``compiled.memory_analysis()``),
* wall time of one call where it is affordable (``--time_max_n``).

Each D runs in its own subprocess (the host device count is fixed when JAX is
imported). Ratios are per-device cost at D over the cost at D = 1; the target
is ``1/D``. ``--top_m M`` uses Smooth-NDCG@M (each query's M candidates of the largest
gains ranked among all N: ``N·M·N/D`` pairs a device instead of ``N³/D``); sizes not timed
are compiled from their shapes alone (nothing allocated), so N = 32,768 fits a laptop.

Usage: python scripts/bench_scaling.py [--sizes 1024,4096,8192] [--devices 1,2,4,8]
  [--top_m 64]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

EMBED = 256
OBJECTIVE = {"triplet": {"mining": "max"}, "smooth_ndcg": {"temperature": 0.01, "block_size": 16}}


def measure(n: int, time_it: bool, top_m: int = 0) -> dict:
  """Memory and wall time of the real program; FLOPs and bytes of its one-block twin.

  XLA's cost analysis counts a while-loop body once, and Smooth-NDCG walks its
  query rows ``block_size`` at a time in a ``lax.map`` loop; so FLOPs and bytes
  come from the same program compiled with one block of all the device's rows
  (no loop, the same arithmetic), memory and time from the real one.
  """
  real = _compile(n, OBJECTIVE["smooth_ndcg"]["block_size"], top_m, allocate=time_it)
  flat = _compile(n, None, top_m, allocate=False)
  out = {**real, "flops": flat["flops"], "bytes": flat["bytes"], "loop_flops": real["flops"]}
  if time_it:
    import jax

    compiled, args = real.pop("_run")
    jax.block_until_ready(compiled(*args))
    started = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    out["wall_s"] = time.perf_counter() - started
  out.pop("_run", None)
  return out


def _compile(n: int, block_size: int | None, top_m: int, allocate: bool) -> dict:
  """One global batch size ``n`` on every visible device; returns the per-device numbers
  (and, when ``allocate``, the compiled program with its arguments, to time it)."""
  import jax
  import jax.numpy as jnp
  import numpy as np
  from jax.sharding import NamedSharding
  from jax.sharding import PartitionSpec as P

  from jitr import losses, models
  from jitr.training import row_exchange
  from jitr.training import step as step_lib

  devices = jax.devices()
  d = len(devices)
  mesh = jax.make_mesh((d,), ("batch",), devices=devices)
  terms = {k: dict(v) for k, v in OBJECTIVE.items()}
  terms["smooth_ndcg"]["block_size"] = block_size or n // d
  terms["smooth_ndcg"]["top_m"] = top_m
  loss_fn = losses.objective(terms)

  def loss_and_grad(img, txt, ids, valid, rel_rows, rel_cols):
    b = ids.shape[0]
    start = jax.lax.axis_index("batch") * b
    positives, where = row_exchange.query_targets(
      {"image_ids": ids, "valid": valid},
      {
        "image_ids": jax.lax.all_gather(ids, "batch", tiled=True),
        "valid": jax.lax.all_gather(valid, "batch", tiled=True),
      },
    )
    queries = row_exchange.DeviceQueries(
      start + jnp.arange(b), positives, where, valid, {"relevance": (rel_rows, rel_cols)}
    )

    def share(img, txt):
      i2t = models.similarity(img, jax.lax.all_gather(txt, "batch", tiled=True))
      t2i = models.similarity(jax.lax.all_gather(img, "batch", tiled=True), txt).T
      return step_lib.split_loss(loss_fn, i2t, t2i, queries, key=None, step=0, axis_name="batch")[0]

    value, grads = jax.value_and_grad(share, argnums=(0, 1))(img, txt)
    return jax.lax.psum(value, "batch"), grads

  split = P("batch")
  fn = jax.jit(
    jax.shard_map(
      loss_and_grad,
      mesh=mesh,
      in_specs=(split,) * 6,
      out_specs=(P(), (split, split)),
    )
  )
  sharding = NamedSharding(mesh, split)
  shapes = [((n, EMBED), np.float32)] * 2 + [((n,), np.int32), ((n,), bool)]
  shapes += [((n, n), np.float32)] * 2  # relevance rows (i2t queries) and of relevance.T
  if allocate:
    rng = np.random.default_rng(0)
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)
    host = (
      unit(rng.normal(size=(n, EMBED))).astype(np.float32),
      unit(rng.normal(size=(n, EMBED))).astype(np.float32),
      np.arange(n, dtype=np.int32) // 5,
      np.ones(n, bool),
      rng.uniform(size=(n, n)).astype(np.float32),
      rng.uniform(size=(n, n)).astype(np.float32),
    )
    args = [jax.device_put(x, sharding) for x in host]
  else:
    args = [jax.ShapeDtypeStruct(shape, dtype, sharding=sharding) for shape, dtype in shapes]
  started = time.perf_counter()
  compiled = fn.lower(*args).compile()
  compile_s = time.perf_counter() - started
  cost = compiled.cost_analysis()
  cost = cost[0] if isinstance(cost, list) else cost
  memory = compiled.memory_analysis()
  peak = (
    memory.argument_size_in_bytes
    + memory.output_size_in_bytes
    + memory.temp_size_in_bytes
    - memory.alias_size_in_bytes
  )
  out = {
    "devices": d,
    "n": n,
    "flops": float(cost.get("flops", float("nan"))),
    "bytes": float(cost.get("bytes accessed", float("nan"))),
    "peak_bytes": float(peak),
    "temp_bytes": float(memory.temp_size_in_bytes),
    "compile_s": compile_s,
    "wall_s": float("nan"),
    "_run": (compiled, args) if allocate else None,
  }
  return out


def _worker(args) -> None:
  for n in args.sizes:
    row = measure(n, n <= args.time_max_n, args.top_m)
    row.pop("_run", None)
    print(json.dumps(row), flush=True)


def _spawn(devices: int, args) -> list[dict]:
  env = dict(os.environ)
  flags = [f for f in env.get("XLA_FLAGS", "").split() if "host_platform_device_count" not in f]
  env["XLA_FLAGS"] = " ".join(flags + [f"--xla_force_host_platform_device_count={devices}"])
  env["JAX_PLATFORMS"] = "cpu"
  cmd = [
    sys.executable,
    os.path.abspath(__file__),
    "--worker",
    "--sizes",
    ",".join(map(str, args.sizes)),
    "--time_max_n",
    str(args.time_max_n),
    "--top_m",
    str(args.top_m),
  ]
  done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
  if done.returncode:
    sys.exit(f"D={devices} failed:\n{done.stderr[-3000:]}")
  return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _table(rows: list[dict]) -> str:
  base = {r["n"]: r for r in rows if r["devices"] == 1}
  lines = [
    "| N | D | GFLOP/dev | x D·(1/D ratio) | GB accessed/dev | peak MB/dev | x D | wall s |",
    "|---|---|---|---|---|---|---|---|",
  ]
  for r in sorted(rows, key=lambda r: (r["n"], r["devices"])):
    b = base.get(r["n"])
    flop_ratio = r["flops"] * r["devices"] / b["flops"] if b else float("nan")
    mem_ratio = r["peak_bytes"] * r["devices"] / b["peak_bytes"] if b else float("nan")
    lines.append(
      f"| {r['n']:,} | {r['devices']} | {r['flops'] / 1e9:.2f} | {flop_ratio:.3f} | "
      f"{r['bytes'] / 1e9:.3f} | {r['peak_bytes'] / 2**20:.1f} | {mem_ratio:.3f} | "
      f"{r['wall_s']:.3f} |"
    )
  return "\n".join(lines)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sizes", default="1024,4096,8192")
  parser.add_argument("--devices", default="1,2,4,8")
  parser.add_argument("--time_max_n", type=int, default=1024)
  parser.add_argument("--top_m", type=int, default=0, help="Smooth-NDCG@M's M (0: every candidate)")
  parser.add_argument("--json", help="also write the rows to this file")
  parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
  args = parser.parse_args()
  args.sizes = [int(s) for s in args.sizes.split(",")]
  if args.worker:
    _worker(args)
    return
  rows = []
  for devices in (int(s) for s in args.devices.split(",")):
    rows += _spawn(devices, args)
    print(f"D={devices} done", file=sys.stderr, flush=True)
  at = f"@{args.top_m}" if args.top_m else ""
  print(f"triplet + Smooth-NDCG{at} loss and gradient, E={EMBED}, per device (XLA, host CPU)")
  print("x D = per-device cost at D times D over the cost at D = 1 (1.00 = perfect 1/D)")
  print(_table(rows))
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=1)


if __name__ == "__main__":
  main()
