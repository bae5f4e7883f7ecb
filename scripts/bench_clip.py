#!/usr/bin/env python
"""Benchmark: the CLIP fine-tuning step, jitr vs open_clip, side by side, and the images'
decoding (``scripts/bench_train.py --model=clip`` runs this script).

One step of ``configs/clip.py``'s recipe on an open_clip tower (``--tower``, default
ViT-B-16, cut to ``--layers`` blocks per tower for a CPU run; batch ``--batch`` of images
at the tower's size and captions of its context length): InfoNCE at the learned
temperature, AdamW (lr 1e-5, β₂ 0.98, ε 1e-6, weight decay 0.2 on matrices only) after
clipping the gradients' global norm at 1, two ways:

* ``jitr``: ``make_model({"name": "clip", ...})`` + ``make_train_step(axis_name=None)`` +
  ``make_optimizer`` + ``losses.objective({"clip": info_nce, logit_scale "learned"})``;
  ``jax.jit(donate_argnums=(0,))``.
* ``open_clip``: its model and ``ClipLoss``, AdamW with open_clip's two parameter groups
  (``p.ndim < 2``, norms, biases and ``logit_scale`` undecayed), ``clip_grad_norm_`` and the
  clamp of ``logit_scale``, as ``open_clip/training/train.py`` steps.

Both start from the same weights (open_clip's random init converted with
``params_from_open_clip``) and take the same batch; their eval-mode embeddings are compared
first (the largest difference is printed). The steps are timed in interleaved rounds
(median ms/step, steps/s, open_clip's time / jitr's) and the peak memory printed: PyTorch's
(CUDA ``max_memory_allocated``, or the CPU process's ``ru_maxrss`` growth) and jitr's XLA
``memory_analysis`` with and without ``remat`` (each block recomputed in the backward
pass). ``--dtype=bfloat16`` runs jitr's matmuls in bfloat16 and open_clip's step under
``torch.autocast(dtype=torch.bfloat16)`` (its ``amp_bf16``).

Then the input pipeline: ``--images`` generated JPEGs of 500 × 375 (Flickr30K's usual
size) made into training inputs by jitr's ``ImageFiles.take`` (PIL, open_clip's
random-resized crop, a pool of one thread per core) and by open_clip's own training
transform (torchvision) over a thread pool of the same size: images/s of each.

open_clip needs PyPI's torch and torchvision: run it in the environment
``.ci/open_clip_parity.sh`` makes. Usage::

    .venv-open-clip/bin/python scripts/bench_clip.py --layers 2 --batch 32   # a CPU run
    .venv-open-clip/bin/python scripts/bench_train.py --model=clip --torch_device=cuda \\
      --layers 0 --batch 256 --dtype bfloat16                              # ViT-B-16 on a GPU
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LR, WEIGHT_DECAY, CLIP = 1e-5, 0.2, 1.0
# configs/clip.py's optimizer settings, over bench_recipe's whole Adam group (written out:
# this script runs without ml_collections)
ADAMW = {
  "name": "adamw",
  "learning_rate": LR,
  "weight_decay": WEIGHT_DECAY,
  "grad_clip": CLIP,
  "schedule": "cosine",
  "warmup_steps": 500,
  "b2": 0.98,
  "eps": 1e-6,
  "decay_matrices_only": True,
}
OBJECTIVE = {"clip": {"loss": "info_nce", "weight": 1.0, "logit_scale": "learned"}}


def parse_args(argv=None) -> argparse.Namespace:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--model", default="clip", help="(scripts/bench_train.py's --model)")
  p.add_argument("--tower", default="ViT-B-16", help="an open_clip model name")
  p.add_argument("--layers", type=int, default=2, help="blocks per tower; 0: all")
  p.add_argument("--batch", type=int, default=32)
  p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
  p.add_argument("--torch_device", default="cpu")
  p.add_argument("--precision", choices=("highest", "tf32"), default="highest")
  p.add_argument("--threads", type=int, default=0, help="torch threads; 0: one per core")
  p.add_argument("--warmup", type=int, default=1)
  p.add_argument("--rounds", type=int, default=3)
  p.add_argument("--steps", type=int, default=2)
  p.add_argument("--images", type=int, default=64, help="JPEGs decoded; 0: no pipeline table")
  p.add_argument("--tiny", action="store_true", help="a 2-block tower of width 64 (tests)")
  return p.parse_args(argv)


def open_clip_model(args):
  """open_clip's model of ``--tower`` (random weights, seed 0) with ``--layers`` blocks per
  tower, and jitr's config of it."""
  import open_clip
  import torch

  from jitr.models.clip import clip_config

  cfg = open_clip.get_model_config(args.tower)
  if args.tiny:
    cfg = {
      "embed_dim": 32,
      "vision_cfg": {"image_size": 64, "layers": 2, "width": 64, "patch_size": 16},
      "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
    }
  elif args.layers:
    cfg = {
      **cfg,
      "vision_cfg": {**cfg["vision_cfg"], "layers": args.layers},
      "text_cfg": {**cfg["text_cfg"], "layers": args.layers},
    }
  torch.manual_seed(0)
  return open_clip.CLIP(**cfg), clip_config(cfg, name=args.tower)


def make_batch(config, batch: int) -> dict[str, np.ndarray]:
  rng = np.random.default_rng(0)
  size, context = config.vision.image_size, config.text.context_length
  tokens = np.zeros((batch, context), np.int32)
  for i in range(batch):  # [SOT] words [EOT], 8 to 20 ids
    n = int(rng.integers(8, 21))
    tokens[i, :n] = rng.integers(1, 49406, n)
    tokens[i, 0], tokens[i, n - 1] = 49406, 49407
  return {
    "images": rng.normal(size=(batch, size, size, 3)).astype(np.float32),
    "tokens": tokens,
    "image_ids": np.arange(batch, dtype=np.int32),
    "caption_indices": np.arange(batch, dtype=np.int32),
    "valid": np.ones(batch, bool),
  }


def jitr_model(config, args, remat: bool):
  from jitr.models.clip import ClipModel
  from jitr.models.clip.network import clip_model

  module = ClipModel(config, dtype=np.dtype(args.dtype), remat=remat)
  return clip_model(module)


def compile_step(args, config, batch, params, remat: bool):
  """``(compiled step, train state, compile seconds)``."""
  import jax
  from bench_recipe import OPTIMIZER

  from jitr import losses, training
  from jitr.models.clip.layer_ranks import layer_ranks

  model = jitr_model(config, args, remat)
  tx = training.make_optimizer(
    {**OPTIMIZER, **ADAMW}, steps_per_epoch=1000, layer_ranks=layer_ranks
  )
  state = training.create_train_state({"params": params}, tx, jax.random.key(1))
  step = training.make_train_step(losses.objective(OBJECTIVE), model=model, axis_name=None)
  t0 = time.perf_counter()
  compiled = jax.jit(step, donate_argnums=(0,)).lower(state, batch).compile()
  return compiled, state, time.perf_counter() - t0


class OpenClipRunner:
  """open_clip's step (``train_one_epoch``'s body): forward, ``ClipLoss``, backward,
  ``clip_grad_norm_``, AdamW, the ``logit_scale`` clamp."""

  def __init__(self, args, model, batch):
    import torch
    from bench_recipe import torch_peak_memory
    from open_clip.loss import ClipLoss

    self.kind = "open_clip"
    self.device = torch.device(args.torch_device)
    self.model = model.to(self.device).train()
    named = list(self.model.named_parameters())

    def exclude(n, p):  # open_clip/training/main.py
      return p.ndim < 2 or "bn" in n or "ln" in n or "bias" in n or "logit_scale" in n

    self.opt = torch.optim.AdamW(
      [
        {"params": [p for n, p in named if exclude(n, p)], "weight_decay": 0.0},
        {"params": [p for n, p in named if not exclude(n, p)], "weight_decay": WEIGHT_DECAY},
      ],
      lr=LR,
      betas=(0.9, 0.98),
      eps=1e-6,
    )
    self.loss = ClipLoss()
    images = np.ascontiguousarray(batch["images"].transpose(0, 3, 1, 2))
    self.images = torch.from_numpy(images).to(self.device)
    self.tokens = torch.from_numpy(batch["tokens"]).long().to(self.device)
    self.autocast = args.dtype == "bfloat16"
    self.memory = torch_peak_memory(self.device, lambda: [self.sync(self.run()) for _ in range(2)])

  def run(self):
    import math

    import torch

    self.opt.zero_grad(set_to_none=True)
    with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
      image_features, text_features, logit_scale = self.model(self.images, self.tokens)
      loss = self.loss(image_features, text_features, logit_scale)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(self.model.parameters(), CLIP, norm_type=2.0)
    self.opt.step()
    with torch.no_grad():
      self.model.logit_scale.clamp_(0, math.log(100))
    return loss

  def sync(self, out) -> float:
    return float(out.detach())


def eval_difference(args, config, model, batch, params) -> float:
  """Largest ``|jitr − open_clip|`` of both towers' unit embeddings in eval mode."""
  import jax
  import torch

  n = min(args.batch, 8)
  ours = jitr_model(config, argparse.Namespace(dtype="float32"), False)
  variables = {"params": params}
  model.eval()
  with torch.no_grad():
    images = torch.from_numpy(np.ascontiguousarray(batch["images"][:n].transpose(0, 3, 1, 2)))
    want_img = model.encode_image(images, normalize=True).numpy()
    want_txt = model.encode_text(torch.from_numpy(batch["tokens"][:n]).long(), True).numpy()
  got_img = jax.jit(ours.encode_images)(variables, batch["images"][:n])
  got_txt = jax.jit(ours.encode_captions)(variables, batch["tokens"][:n])
  return max(
    float(np.abs(np.asarray(got_img) - want_img).max()),
    float(np.abs(np.asarray(got_txt) - want_txt).max()),
  )


def write_jpegs(folder: str, count: int) -> list[str]:
  from PIL import Image

  rng = np.random.default_rng(0)
  paths = []
  for k in range(count):
    pixels = rng.integers(0, 256, (375, 500, 3), dtype=np.uint8)
    pixels = (pixels // 32 * 32).astype(np.uint8)  # coarser noise: a photo's JPEG size
    path = os.path.join(folder, f"{k:05d}.jpg")
    Image.fromarray(pixels).save(path, quality=90)
    paths.append(path)
  return paths


def pipeline_rates(config, count: int) -> tuple[dict[str, float], int]:
  """``({pipeline: images/s}, threads)``: jitr's training inputs and open_clip's training
  transform, each over ``count`` JPEGs with a pool of one thread per core (the best of two
  passes)."""
  import open_clip
  from PIL import Image

  from jitr.data.image_files import ImageFiles, decode_pool
  from jitr.models.clip.open_clip_configs import OPENAI

  size = config.vision.image_size
  transform = open_clip.image_transform(size, is_train=True)
  workers = decode_pool()._max_workers
  with tempfile.TemporaryDirectory() as folder:
    paths = write_jpegs(folder, count)
    files = ImageFiles(tuple(paths), size, OPENAI)
    seeds = np.arange(count)
    theirs_pool = concurrent.futures.ThreadPoolExecutor(workers)

    def ours() -> None:
      files.take(np.arange(count), seeds)

    def theirs() -> None:
      list(theirs_pool.map(lambda p: transform(Image.open(p)), paths))

    rates = {}
    for name, run in (("jitr ImageFiles.take (PIL)", ours), ("open_clip transform", theirs)):
      best = min(_seconds(run) for _ in range(2))
      rates[name] = count / best
    theirs_pool.shutdown()
  return rates, workers


def _seconds(run) -> float:
  t0 = time.perf_counter()
  run()
  return time.perf_counter() - t0


LABELS = {"jitr": "jitr", "jitr, remat": "jitr, remat", "open_clip": "open_clip"}


def print_tables(times: dict, memory: dict[str, str], title: str) -> None:
  """The step table (median wall ms, steps/s, open_clip's time / this, CPU ms) and the peak
  memory table."""
  import statistics

  med = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
  cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
  ref = med["open_clip"]
  n = len(next(iter(times.values())))
  print(f"\n### {title}\n")
  print(
    f"| implementation | ms/step (median of {n}) | steps/s | open_clip time / this | CPU ms/step |"
  )
  print("|---|---:|---:|---:|---:|")
  for k, m in med.items():
    print(f"| {LABELS[k]} | {1e3 * m:.0f} | {1 / m:.2f} | {ref / m:.2f}× | {1e3 * cpu[k]:.0f} |")
  print("\n| implementation | peak memory of the step |\n|---|---|")
  for k, text in memory.items():
    print(f"| {LABELS[k]} | {text} |")
  sys.stdout.flush()


def main(argv=None) -> None:
  args = parse_args(argv)
  for path in (ROOT, os.path.join(ROOT, "scripts")):
    if path not in sys.path:
      sys.path.insert(0, path)
  import jax
  import torch
  from bench_recipe import JitrRunner, memory_text, set_matmul_precision, time_interleaved
  from bench_vseinf import environment_line

  from jitr.models.clip.open_clip_names import params_from_open_clip

  start = time.perf_counter()
  set_matmul_precision(args.precision)
  torch.set_num_threads(args.threads or os.cpu_count() or 1)
  model, config = open_clip_model(args)
  print(
    f"CLIP train step: {config.name}, {config.vision.layers} + {config.text.layers} blocks "
    f"(width {config.vision.width} / {config.text.width}), {config.vision.image_size}² images, "
    f"{config.text.context_length} tokens, batch {args.batch}; InfoNCE (learned scale), AdamW "
    f"{LR} (β₂ 0.98, ε 1e-6, weight decay {WEIGHT_DECAY} on matrices) + clip {CLIP}; compute "
    f"dtype {args.dtype}; " + environment_line(args)
  )
  batch = make_batch(config, args.batch)
  params = jax.tree.map(jax.numpy.asarray, params_from_open_clip(model.state_dict(), config))
  diff = eval_difference(args, config, model, batch, params)
  print(f"largest |jitr − open_clip| of the eval-mode embeddings (same weights): {diff:.1e}")
  theirs = OpenClipRunner(args, model, batch)  # its memory before JAX's
  ours = JitrRunner(batch, lambda b: compile_step(args, config, b, params, False))
  remat_memory = memory_text(compile_step(args, config, ours.batch, params, True)[0])
  times = time_interleaved([ours, theirs], warmup=args.warmup, rounds=args.rounds, steps=args.steps)
  memory = {"jitr": ours.memory, "jitr, remat": remat_memory, "open_clip": theirs.memory}
  print_tables(times, memory, f"CLIP train step ({args.dtype}, compile {ours.compile_s:.0f}s)")
  if args.images:
    rates, workers = pipeline_rates(config, args.images)
    size = config.vision.image_size
    print(f"\n### Training images ({args.images} JPEGs 500×375 → {size}², {workers} threads)\n")
    print("| pipeline | images/s | this / open_clip |\n|---|---:|---:|")
    ref = rates["open_clip transform"]
    for name, rate in rates.items():
      print(f"| {name} | {rate:.0f} | {rate / ref:.2f}× |")
  print(f"\n(total {time.perf_counter() - start:.0f}s)")


if __name__ == "__main__":
  main()
