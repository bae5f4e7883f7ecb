"""The training recipe every train-step benchmark shares (scripts/bench_train.py,
scripts/bench_models.py): Adam 2e-4 after global-norm clipping at 2, and the VSE++
max-violation triplet (LMH, margin 0.2, both directions), in jitr and in PyTorch."""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

MARGIN = 0.2
LR = 2e-4
CLIP = 2.0
# a whole optimizer group (configs/default.py's fields): Adam, no decay
OPTIMIZER = {
  "name": "adam",
  "learning_rate": LR,
  "grad_clip": CLIP,
  "decay_epochs": (),
  "decay_factor": 0.1,
  "module_decay_factors": {},
  "module_lr_factors": {},
  "schedule": "step",
  "warmup_steps": 0,
  "b2": 0.999,
  "eps": 1e-8,
  "decay_matrices_only": False,
  "frozen_modules": (),
  "layer_decay": 1.0,
}
OBJECTIVE = {"triplet": {"weight": 1.0, "mining": "max", "margin": MARGIN}}


def torch_triplet(sim: torch.Tensor) -> torch.Tensor:
  """VSE++ max-violation (LMH), both directions, mean over queries (as jitr):
  ``mean_i [α + max_{j≠i} s_ij − s_ii]_+ + mean_j [α + max_{i≠j} s_ij − s_jj]_+``."""
  d = sim.diag()
  eye = torch.eye(sim.shape[0], dtype=torch.bool, device=sim.device)
  neg = sim.masked_fill(eye, float("-inf"))
  i2t = torch.relu(MARGIN + neg.max(dim=1).values - d)
  t2i = torch.relu(MARGIN + neg.max(dim=0).values - d)
  return i2t.mean() + t2i.mean()


def gib(n: float) -> str:
  """Bytes as ``1.93 GiB`` (or ``711 MiB`` under one GiB)."""
  return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def set_matmul_precision(precision: str) -> None:
  """One float32 matrix-product precision for both frameworks (they differ by default on
  GPU: JAX lets XLA use TF32, PyTorch does not): ``highest`` is true float32 in both,
  ``tf32`` lets both use the TF32 tensor-core path. No effect on CPU."""
  import jax

  jax_name = {"highest": "highest", "tf32": "tensorfloat32"}[precision]
  jax.config.update("jax_default_matmul_precision", jax_name)
  torch.set_float32_matmul_precision({"highest": "highest", "tf32": "high"}[precision])
  torch.backends.cudnn.allow_tf32 = precision == "tf32"


def torch_peak_memory(device: torch.device, run_twice) -> str:
  """Peak memory of two PyTorch steps: on CUDA ``max_memory_allocated`` (everything the
  caching allocator handed out: parameters, Adam state, batch and activations); on CPU
  the process's ``ru_maxrss`` growth (what was allocated before is not in it)."""
  import resource

  if device.type == "cuda":
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    run_twice()
    peak = torch.cuda.max_memory_allocated(device)
    return f"{gib(peak)} (torch.cuda.max_memory_allocated over 2 steps)"
  before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  run_twice()
  grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024  # KiB on Linux
  return f"{gib(grown)} (ru_maxrss growth over 2 steps)"


def time_interleaved(runners, *, warmup: int, rounds: int, steps: int, log: bool = False) -> dict:
  """``{kind: [(wall s, cpu s), ...]}`` over ``rounds`` × ``steps`` steps of each runner
  (``r.run()`` one step, ``r.sync(out)`` waits for it and returns the loss), interleaved
  so that a change of the machine's load hits every runner alike, after ``warmup`` steps
  each (at least one: the compile) whose loss must be finite. ``log``: each step's time on
  stderr."""
  for r in runners:
    for _ in range(max(warmup, 1)):
      loss = r.sync(r.run())
      if not np.isfinite(loss):
        raise RuntimeError(f"{r.kind}: non-finite loss {loss}")
  times = {r.kind: [] for r in runners}
  for _ in range(rounds):
    for r in runners:
      for _ in range(steps):
        t0, c0 = time.perf_counter(), time.process_time()
        r.sync(r.run())
        times[r.kind].append((time.perf_counter() - t0, time.process_time() - c0))
        if log:
          print(f"  {r.kind}: {times[r.kind][-1][0]:.2f}s", file=sys.stderr, flush=True)
  return times


def memory_text(compiled) -> str:
  m = compiled.memory_analysis()
  return (
    f"{gib(m.temp_size_in_bytes + m.argument_size_in_bytes)} "
    f"(XLA memory_analysis: temp {gib(m.temp_size_in_bytes)} + "
    f"arguments {gib(m.argument_size_in_bytes)})"
  )


class JitrRunner:
  """A compiled jitr train step on one batch (``run()`` one step, ``sync(out)`` its loss,
  as :func:`time_interleaved` calls them); ``compile_fn(device batch) -> (compiled step,
  train state, compile seconds)``; ``memory``: the step's XLA peak."""

  kind = "jitr"

  def __init__(self, batch, compile_fn):
    import jax

    self.batch = jax.device_put(batch)
    self.step, self.state, self.compile_s = compile_fn(self.batch)
    self.memory = memory_text(self.step)

  def run(self):
    self.state, metrics = self.step(self.state, self.batch)
    return metrics["loss"]

  def sync(self, out) -> float:
    import jax

    return float(jax.block_until_ready(out))
