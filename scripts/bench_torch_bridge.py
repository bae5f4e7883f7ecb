#!/usr/bin/env python
"""Benchmark: a PyTorch training step with Listwise ITR's loss in PyTorch vs through jitr.torch.

One step = a small linear dual encoder (image features -> D, caption features -> D,
L2-normalised) forward, the triplet + Smooth-NDCG loss, backward, SGD update. The
PyTorch loss is Listwise ITR's ``TripletSNDCGLoss`` written from its code (the
``[N, N, N]`` pairwise differences, by broadcasting instead of ``repeat``); the bridged
one is :class:`jitr.torch.TripletSNDCGLoss` (jitr's jitted JAX loss, tensors by
DLPack). Each step's time is the median of ``--repeats`` steps after a warm-up. The
bridge's overhead per call is its time for ``loss + backward`` on a fixed ``sim`` minus
the same jitted JAX value-and-grad called directly on JAX arrays (fastest of
interleaved calls).

The PyTorch step runs in a child process per N (this script with a hidden flag) under
an address-space limit (``RLIMIT_AS``, ``--torch_memory_limit_gb``, default 80% of
``MemAvailable``), so that a step too large for the machine fails with an out-of-memory
error instead of swapping; its row then says so, and the jitr columns are still
measured. The child reports the step's time and its peak memory: the growth of the
process's ``ru_maxrss`` over the first step at N, measured after one step at N = 8
(library initialisation) and after building the model and batch. jitr's peak memory is
XLA's ``memory_analysis()`` of the compiled value-and-grad of the loss (temp + arguments
+ outputs), the program that the overhead's direct calls run.

On a GPU, ``--torch_device=cuda`` puts the encoders, the batch and both losses there (JAX
takes the GPU by itself when its CUDA plugin is installed, and DLPack hands the tensors
over without a copy; share the card with ``XLA_PYTHON_CLIENT_MEM_FRACTION=0.45``); every
timed call then ends with ``torch.cuda.synchronize()``, the child has no address-space
limit (CUDA reserves far more than it uses) and its peak is
``torch.cuda.max_memory_allocated`` over the first step, less what was allocated before it.

Usage: python scripts/bench_torch_bridge.py [--sizes 128,256,512] [--with_1024] [--repeats 5]
  [--torch_memory_limit_gb GIB] [--torch_device cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # jitr from this checkout, installed or not

IMG_DIM, TXT_DIM, EMBED, SENT_DIM, REFS = 512, 300, 256, 384, 5
OPT = types.SimpleNamespace(margin=0.2, tau=0.01, sndcg_weight=0.5, batch_size=0)
CHILD_RESULT = "torch step result: "  # the child's stdout line: this prefix + JSON
MIB = 2**20


def reference_loss(v, t, v_text_emb, t_text_emb, margin, tau, w):
  """Listwise ITR's ``TripletSNDCGLoss.forward`` (official orientation), loss only."""
  import torch

  n = v.size(0)
  scores = v.mm(t.t())
  pos = scores.diag().view(n, 1)
  pos_mask = torch.eye(n, device=scores.device)
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


def _median_ms(fn, repeats: int, warm_up: bool = True) -> float:
  """The median time of ``repeats`` calls of ``fn`` in ms, after one more call first
  (warm-up, and the bridge's compile) when ``warm_up``."""
  if warm_up:
    fn()
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
  return 1e3 * statistics.median(times)


def _synchronize(device: str) -> None:
  """Waits for the device's queued work (CUDA runs asynchronously; the CPU does not)."""
  import torch

  if torch.device(device).type == "cuda":
    torch.cuda.synchronize(device)


def _step_fn(n: int, loss_fn, device: str = "cpu"):
  """A training step of a fresh linear dual encoder on a fixed random batch, on ``device``
  (the batch drawn on the CPU, so every device trains on the same numbers)."""
  import torch

  gen = torch.Generator().manual_seed(n)
  img_enc = torch.nn.Linear(IMG_DIM, EMBED).to(device)
  txt_enc = torch.nn.Linear(TXT_DIM, EMBED).to(device)
  params = [*img_enc.parameters(), *txt_enc.parameters()]
  optimizer = torch.optim.SGD(params, lr=0.01)
  images, captions = torch.randn(n, IMG_DIM, generator=gen), torch.randn(n, TXT_DIM, generator=gen)
  refs = torch.randn(n, REFS, SENT_DIM, generator=gen)
  caps = torch.randn(n, SENT_DIM, generator=gen)
  images, captions, refs, caps = (x.to(device) for x in (images, captions, refs, caps))

  def step():
    optimizer.zero_grad()
    v = torch.nn.functional.normalize(img_enc(images), dim=1)
    t = torch.nn.functional.normalize(txt_enc(captions), dim=1)
    loss = loss_fn(v, t, refs, caps)
    loss.backward()
    optimizer.step()
    _synchronize(device)

  return step


def _torch_loss(v, t, r, c):
  """The PyTorch reference loss at this benchmark's hyper-parameters."""
  return reference_loss(v, t, r, c, OPT.margin, OPT.tau, OPT.sndcg_weight)


def _max_rss_mib() -> float:
  """This process's peak resident memory so far (``ru_maxrss``), in MiB."""
  rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  return rss / MIB if sys.platform == "darwin" else rss / 1024  # bytes on macOS, else KiB


def _is_out_of_memory(error: BaseException) -> bool:
  """Whether ``error`` is a failed allocation (Python's or torch's CPU allocator's)."""
  text = str(error).lower()
  return isinstance(error, MemoryError) or (
    isinstance(error, RuntimeError) and ("can't allocate memory" in text or "out of memory" in text)
  )


def _torch_child(n: int, repeats: int, limit_gib: float | None, device: str = "cpu") -> None:
  """Prints one line, ``CHILD_RESULT`` + JSON: the PyTorch step at ``n``'s median time
  in ms (``ms``) and its peak memory in MiB (``peak_mib``: on the CPU this process's
  ``ru_maxrss`` growth over its first step, the address space limited to ``limit_gib``
  GiB; on CUDA ``max_memory_allocated`` over it less what was allocated before); or
  ``out_of_memory`` (the allocator's message) when memory stopped the step."""
  import torch

  cuda = torch.device(device).type == "cuda"
  _step_fn(8, _torch_loss, device)()  # library initialisation (lazy loading), not counted
  torch.ones(1 << 16).exp_()  # starts the intra-op thread pool before the limit
  if limit_gib is not None and not cuda:
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (int(limit_gib * 2**30), hard))
  try:
    step = _step_fn(n, _torch_loss, device)
    if cuda:
      torch.cuda.reset_peak_memory_stats(device)
      before = torch.cuda.memory_allocated(device) / MIB
    else:
      before = _max_rss_mib()
    step()  # the measured step, also the timing's warm-up
    peak = torch.cuda.max_memory_allocated(device) / MIB if cuda else _max_rss_mib()
    result = {"peak_mib": peak - before}
    result["ms"] = _median_ms(step, repeats, warm_up=False)
  except (MemoryError, RuntimeError) as error:
    if not _is_out_of_memory(error):
      raise
    result = {"out_of_memory": str(error).strip().splitlines()[0][:300]}
  print(CHILD_RESULT + json.dumps(result), flush=True)


def _torch_step(n: int, repeats: int, limit_gib: float | None, device: str = "cpu") -> dict:
  """The PyTorch step at ``n`` measured by ``_torch_child`` in a child process: its
  result, or ``{"failed": ...}`` (its stderr's end then printed to stderr) when it
  printed none."""
  command = [sys.executable, os.path.abspath(__file__), "--torch_child", str(n)]
  command += ["--repeats", str(repeats), "--torch_device", device]
  if limit_gib is not None:
    command += ["--torch_memory_limit_gb", repr(limit_gib)]
  out = subprocess.run(command, capture_output=True, text=True)
  for line in reversed(out.stdout.splitlines()):
    if line.startswith(CHILD_RESULT):
      return json.loads(line[len(CHILD_RESULT) :])
  sys.stderr.write(f"PyTorch step at N = {n} failed:\n{out.stderr[-3000:]}\n")
  return {"failed": f"exit code {out.returncode}"}


def _default_limit_gib() -> float | None:
  """80% of the machine's available memory (``MemAvailable``) in GiB; None where
  ``/proc/meminfo`` does not say."""
  try:
    with open("/proc/meminfo") as f:
      for line in f:
        if line.startswith("MemAvailable:"):
          return round(0.8 * int(line.split()[1]) / 2**20, 1)  # kB -> GiB
  except OSError:
    pass
  return None


def _overhead_ms(n: int, repeats: int, device: str = "cpu") -> tuple[float, float, float]:
  """(bridge loss + backward, the same jitted JAX value-and-grad called directly): the
  fastest of ``repeats`` interleaved calls each, in ms; and that value-and-grad's peak
  memory in MiB, XLA's ``memory_analysis()`` temp + arguments + outputs."""
  import jax
  import torch

  from jitr.torch import bridge, triplet_sndcg

  gen = torch.Generator().manual_seed(0)
  sim = (torch.rand(n, n, generator=gen) * 2 - 1).to(device).requires_grad_(True)
  refs, caps = torch.randn(n, REFS, SENT_DIM, generator=gen), torch.randn(n, SENT_DIM)
  refs, caps = refs.to(device), caps.to(device)
  hyper = dict(
    margin=OPT.margin, temperature=OPT.tau, sndcg_weight=OPT.sndcg_weight, orientation="official"
  )

  def bridged():
    bridge.loss(triplet_sndcg, sim, refs, caps, **hyper)[0].backward()
    _synchronize(device)

  direct_fn = jax.jit(
    jax.value_and_grad(lambda s, r, c: triplet_sndcg(s, r, c, **hyper), has_aux=True)
  )
  arrays = [bridge.to_jax(x) for x in (sim, refs, caps)]

  def direct():
    jax.block_until_ready(direct_fn(*arrays))

  bridged(), direct()  # compile both
  memory = direct_fn.lower(*arrays).compile().memory_analysis()  # the program just compiled
  peak = memory.temp_size_in_bytes + memory.argument_size_in_bytes + memory.output_size_in_bytes
  times = {bridged: [], direct: []}
  for _ in range(repeats):  # interleaved, so load changes hit both alike
    for fn, out in times.items():
      start = time.perf_counter()
      fn()
      out.append(time.perf_counter() - start)
  return 1e3 * min(times[bridged]), 1e3 * min(times[direct]), peak / MIB


def _limit_text(limit_gib: float | None) -> str:
  """``limit_gib`` as the table writes it: ``limit 17.9 GiB``, or ``no limit``."""
  return "no limit" if limit_gib is None else f"limit {limit_gib:g} GiB"


def _row(
  n: int, ref: dict, t_jitr: float, call: float, direct: float, jitr_peak: float, limit_gib
) -> str:
  """The table row of ``n``: the PyTorch child's result ``ref`` (its time and peak, or
  ``out of memory (limit ...)`` / ``failed (...)`` in both cells and ``—`` as the ratio)
  next to jitr's step time, bridge call, direct call, their difference and peak."""
  if "ms" in ref:
    t_ref, ratio, ref_peak = (
      f"{ref['ms']:.1f}",
      f"{ref['ms'] / t_jitr:.2f}x",
      f"{ref['peak_mib']:.1f}",
    )
  else:
    failure = (
      f"out of memory ({_limit_text(limit_gib)})"
      if "out_of_memory" in ref
      else f"failed ({ref['failed']})"
    )
    t_ref, ratio, ref_peak = failure, "—", failure
  return (
    f"| {n} | {t_ref} | {t_jitr:.1f} | {ratio} | {call:.1f} | {direct:.1f} |"
    f" {call - direct:.2f} | {ref_peak} | {jitr_peak:.1f} |"
  )


def device_problem(device: str) -> str | None:
  """Why PyTorch cannot run the step on ``device`` (a name torch does not know, a CUDA
  device on a PyTorch built without CUDA or on a machine without that GPU), in one line;
  ``None`` when an empty tensor can be made there."""
  import torch

  try:
    torch.empty(0, device=device)
  except (AssertionError, RuntimeError) as err:  # what torch raises for each of them
    cause = " ".join(str(err).split()) or type(err).__name__
    return (
      f"--torch_device={device}: PyTorch {torch.__version__} cannot use it ({cause}); "
      "expected cpu, or a GPU this PyTorch was built for (cuda, cuda:1, ...)"
    )
  return None


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sizes", default="128,256,512")
  parser.add_argument(
    "--with_1024", action="store_true", help="also N = 1024 (4 GiB per [N, N, N] tensor)"
  )
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument(
    "--torch_memory_limit_gb",
    type=float,
    default=None,
    help="address-space limit (GiB) of the PyTorch step's process; default 80%% of MemAvailable",
  )
  parser.add_argument(
    "--torch_device", default="cpu", help="where PyTorch runs the step (cpu, cuda, cuda:1, ...)"
  )
  parser.add_argument("--torch_child", type=int, default=None, help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.torch_child is not None:
    return _torch_child(
      args.torch_child, args.repeats, args.torch_memory_limit_gb, args.torch_device
    )
  sizes = [int(s) for s in args.sizes.split(",")] + ([1024] if args.with_1024 else [])
  device = args.torch_device
  problem = device_problem(device)
  if problem is not None:  # before anything is printed or a child is started
    raise SystemExit(f"{os.path.basename(__file__)}: error: {problem}")

  import jax
  import torch

  from jitr.torch import TripletSNDCGLoss

  cuda = torch.device(device).type == "cuda"
  limit = None if cuda else args.torch_memory_limit_gb or _default_limit_gib()
  print(
    f"torch {torch.__version__} on {device}, {torch.get_num_threads()} threads, "
    f"{os.cpu_count()} CPUs; jax {jax.__version__} on {jax.devices()[0].device_kind}"
  )
  if cuda:
    print("PyTorch step: a child process per N on the GPU (no address-space limit)")
  else:
    print(f"PyTorch step: a child process per N, address space (RLIMIT_AS) {_limit_text(limit)}")
  peak = "torch.cuda.max_memory_allocated" if cuda else "ru_maxrss growth"
  header = "| N | PyTorch loss step (ms) | jitr.torch step (ms) | PyTorch / jitr.torch |"
  header += " bridge call (ms) | direct JAX (ms) | overhead per call (ms) |"
  header += f" PyTorch step peak (MiB, {peak} over 1 step) |"
  header += " jitr loss peak (MiB, XLA memory_analysis: temp + arguments + outputs) |"
  print(header)
  print("|" + "---|" * 9)
  for n in sizes:
    ref = _torch_step(n, args.repeats, limit, device)
    opt = types.SimpleNamespace(**{**vars(OPT), "batch_size": n})
    bridged = TripletSNDCGLoss(opt, orientation="official")
    t_jitr = _median_ms(_step_fn(n, lambda *xs, fn=bridged: fn(*xs)[0], device), args.repeats)
    call, direct, jitr_peak = _overhead_ms(n, max(args.repeats, 7), device)
    if "ms" not in ref:
      print(f"PyTorch step at N = {n}: {ref}", file=sys.stderr, flush=True)
    print(_row(n, ref, t_jitr, call, direct, jitr_peak, limit), flush=True)


if __name__ == "__main__":
  main()
