#!/usr/bin/env python
"""Benchmark: the VSE∞ train step (BUTD regions + BERT), jitr vs the official PyTorch
modules, side by side (``scripts/bench_train.py --model=vseinf`` runs this script).

One step of VSE∞ as its official code trains after the warm-up (batch 128 pairs, 36 ×
2048 region features through ``EncoderImageAggr`` (Linear + MLP residual, GPO);
captions of 32 WordPiece ids through BERT, Linear 768 → 1024 and GPO; ``s = img @ txt.T``;
the max-violation triplet, margin 0.2, both directions; AdamW 5e-4 with BERT's parameters
at 0.1× and weight decay 1e-4, after clipping the gradients' global norm at 2), two ways:

* ``jitr``: ``make_model({"name": "vseinf", ...})`` + ``make_train_step(axis_name=None)`` +
  ``make_optimizer`` (``module_lr_factors = {"bert": 0.1}``) + ``losses.objective``;
  ``jax.jit(donate_argnums=(0,))``.
* ``pytorch``: the official modules transcribed (tests/models/vseinf_reference.py) with
  transformers' ``BertModel``, the official AdamW parameter groups, ``clip_grad_norm_``.

Both start from the same weights (the PyTorch modules' random weights converted with
:func:`jitr.models.vseinf.convert.official_variables`) and take the same batch; the BERT
is BERT-base sized (768 hidden, 12 layers, 12 heads, 3072) with random weights, nothing
downloaded. ``--bert_layers`` / ``--batch`` shrink it for a CPU run. The embeddings of
both in eval mode are compared first (their largest difference is printed); then the
steps are timed in interleaved rounds (median ms/step, steps/s, the ratio against
PyTorch) and the peak memory printed: PyTorch's (CUDA ``max_memory_allocated``, or the
CPU process's ``ru_maxrss`` growth) and jitr's XLA ``memory_analysis`` with and without
``remat`` (BERT's layers rematerialised). ``--dtype=bfloat16`` runs jitr's BERT in
bfloat16 (matmuls; LayerNorm and softmax in float32) and PyTorch's forward pass under
``torch.autocast(dtype=torch.bfloat16)``.

It imports neither TensorFlow nor ml_collections (a GPU machine with jax, flax, optax,
torch and transformers runs it). Usage::

    python scripts/bench_vseinf.py --bert_layers 2 --batch 32     # a CPU run
    python scripts/bench_train.py --model=vseinf --torch_device=cuda   # both on a GPU
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np


def parse_args(argv=None) -> argparse.Namespace:
  p = argparse.ArgumentParser(
    description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
  )
  p.add_argument("--model", default="vseinf", choices=("vseinf",), help="this bench's model")
  p.add_argument("--tiny", action="store_true", help="a smoke run: batch 8, 5 × 16 regions, ...")
  p.add_argument("--batch", type=int, default=128)
  p.add_argument("--regions", type=int, default=36)
  p.add_argument("--feature_dim", type=int, default=2048)
  p.add_argument("--tokens", type=int, default=32, help="WordPiece ids per caption")
  p.add_argument("--embed_dim", type=int, default=1024)
  p.add_argument("--bert_layers", type=int, default=12)
  p.add_argument("--bert_hidden", type=int, default=768)
  p.add_argument("--bert_heads", type=int, default=12)
  p.add_argument("--bert_intermediate", type=int, default=3072)
  p.add_argument("--vocab", type=int, default=30522, help="BERT's vocabulary (bert-base: 30522)")
  p.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
  p.add_argument("--warmup", type=int, default=1, help="untimed steps after the compiling one")
  p.add_argument("--rounds", type=int, default=2, help="interleaved timing rounds")
  p.add_argument("--steps", type=int, default=2, help="timed steps per implementation per round")
  p.add_argument(
    "--torch_device", default="cpu", help="where PyTorch runs: cpu, or cuda (JAX takes the GPU)"
  )
  p.add_argument(
    "--precision",
    default="highest",
    choices=("highest", "tf32"),
    help="float32 matrix products in both frameworks (highest: true float32)",
  )
  p.add_argument(
    "--dtype",
    default="float32",
    choices=("float32", "bfloat16"),
    help="compute dtype: jitr's BERT dtype (bfloat16: matmuls in bfloat16, LayerNorm and "
    "softmax in float32) and PyTorch's autocast over the forward pass",
  )
  p.add_argument("--xla_flags", default=None, help="extra XLA_FLAGS (set before jax starts)")
  args = p.parse_args(argv)
  if args.tiny:
    args.batch, args.regions, args.feature_dim, args.tokens, args.embed_dim = 8, 5, 16, 6, 16
    args.bert_layers, args.bert_hidden, args.bert_heads, args.bert_intermediate = 1, 32, 4, 37
    args.vocab = 50
  return args


ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LR = 5e-4  # train_region.sh's learning rate
# lib/vse.py's AdamW (BERT at 0.1 lr, weight decay 1e-4 on every parameter), over
# bench_recipe's whole Adam group
ADAMW = {
  "name": "adamw",
  "learning_rate": LR,
  "weight_decay": 1e-4,
  "module_lr_factors": {"bert": 0.1},
}


def optimizer_group() -> dict:
  """The whole optimizer group of the step: bench_recipe's with :data:`ADAMW`'s changes."""
  from bench_recipe import OPTIMIZER

  return {**OPTIMIZER, **ADAMW}


def make_batch(args) -> dict[str, np.ndarray]:
  """``batch`` pairs: all ``regions`` valid (BUTD's 36 per image); captions of ``tokens``
  ids, ``[CLS]`` (101) first and ``[SEP]`` (102) last (1 and 2 in a tiny vocabulary)."""
  rng = np.random.default_rng(0)
  cls, sep = (101, 102) if args.vocab > 1000 else (1, 2)
  tokens = rng.integers(sep + 1, args.vocab, (args.batch, args.tokens))
  tokens[:, 0], tokens[:, -1] = cls, sep
  return {
    "images": rng.standard_normal((args.batch, args.regions, args.feature_dim)).astype(np.float32),
    "image_mask": np.ones((args.batch, args.regions), bool),
    "tokens": tokens.astype(np.int32),
    "lengths": np.full(args.batch, args.tokens, np.int32),
    "image_ids": np.arange(args.batch, dtype=np.int32),  # distinct images: one positive each
  }


def jitr_settings(args, remat: bool, dtype: str | None = None) -> dict:
  """make_model's settings of the bench's VSE∞ (``dtype``: the BERT's, ``--dtype`` when
  None)."""
  return {
    "name": "vseinf",
    "embed_dim": args.embed_dim,
    "img_dim": args.feature_dim,
    "bert_hidden": args.bert_hidden,
    "bert_layers": args.bert_layers,
    "bert_heads": args.bert_heads,
    "bert_intermediate": args.bert_intermediate,
    "remat": remat,
    "dtype": dtype or args.dtype,
  }


def compile_step(args, batch, variables, remat: bool):
  """``(compiled step, its first state, compile seconds)``: jitr's train step on
  ``variables``, jitted with the state donated."""
  import jax
  from bench_recipe import OBJECTIVE

  from jitr import losses, training
  from jitr.models.registry import make_model

  model = make_model(jitr_settings(args, remat), args.vocab)
  tx = training.make_optimizer(optimizer_group(), steps_per_epoch=1000)
  state = training.create_train_state(variables, tx, jax.random.key(1))
  step = training.make_train_step(losses.objective(OBJECTIVE), model=model, axis_name=None)
  t0 = time.perf_counter()
  compiled = jax.jit(step, donate_argnums=(0,)).lower(state, batch).compile()
  return compiled, state, time.perf_counter() - t0


class TorchRunner:
  """The official modules' step: AdamW groups, ``clip_grad_norm_``, the triplet."""

  def __init__(self, args, batch, img_enc, txt_enc):
    import torch
    import vseinf_reference as ref
    from bench_recipe import CLIP, torch_peak_memory, torch_triplet

    self.kind = "torch"
    self.device = torch.device(args.torch_device)
    self.img_enc, self.txt_enc = img_enc.to(self.device).train(), txt_enc.to(self.device).train()
    self.opt = ref.official_optimizer(self.img_enc, self.txt_enc, LR)
    self.params = [p for group in self.opt.param_groups for p in group["params"]]
    self.clip, self.triplet = CLIP, torch_triplet
    self.images = torch.from_numpy(batch["images"]).to(self.device)
    self.image_lengths = torch.full((args.batch,), args.regions, device=self.device)
    self.tokens = torch.from_numpy(batch["tokens"]).long().to(self.device)
    self.lengths = torch.from_numpy(batch["lengths"]).to(self.device)
    self.autocast = args.dtype == "bfloat16"
    self.memory = torch_peak_memory(self.device, lambda: [self.sync(self.run()) for _ in range(2)])

  def run(self):
    import torch

    self.opt.zero_grad(set_to_none=True)
    with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
      img = self.img_enc(self.images, self.image_lengths)
      txt = self.txt_enc(self.tokens, self.lengths)
      loss = self.triplet((img @ txt.T).float())
    loss.backward()
    torch.nn.utils.clip_grad_norm_(self.params, self.clip)
    self.opt.step()
    return loss

  def sync(self, out) -> float:
    return float(out.detach())


def official_modules(args):
  """The official towers at the bench's sizes (random weights, seed 0)."""
  import torch
  import vseinf_reference as ref

  torch.manual_seed(0)
  bert = ref.bert_model(
    args.vocab, args.bert_hidden, args.bert_layers, args.bert_heads, args.bert_intermediate
  )
  return ref.EncoderImageAggr(args.feature_dim, args.embed_dim), ref.EncoderText(
    args.embed_dim, bert
  )


def eval_difference(args, batch, img_enc, txt_enc, variables) -> float:
  """Largest ``|jitr − PyTorch|`` of both towers' embeddings in eval mode (same weights)."""
  import jax
  import torch

  from jitr.models.registry import make_model

  model = make_model(jitr_settings(args, False, "float32"), args.vocab)
  n = min(args.batch, 16)
  img_enc.eval(), txt_enc.eval()
  with torch.no_grad():
    want_img = img_enc(
      torch.from_numpy(batch["images"][:n]), torch.full((n,), args.regions)
    ).numpy()
    want_txt = txt_enc(
      torch.from_numpy(batch["tokens"][:n]).long(), torch.from_numpy(batch["lengths"][:n])
    ).numpy()
  got_img = jax.jit(model.encode_images)(variables, batch["images"][:n], batch["image_mask"][:n])
  got_txt = jax.jit(model.encode_captions)(variables, batch["tokens"][:n], batch["lengths"][:n])
  return max(
    float(np.abs(np.asarray(got_img) - want_img).max()),
    float(np.abs(np.asarray(got_txt) - want_txt).max()),
  )


LABELS = {"jitr": "jitr VSE∞", "jitr, remat": "jitr VSE∞, remat", "torch": "PyTorch VSE∞"}


def print_tables(times: dict, memory: dict[str, str], title: str) -> None:
  """The time table (median wall ms, steps/s, PyTorch time / this, CPU ms) and the peak
  memory table."""
  med = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
  cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
  ref = med.get("torch")
  n = len(next(iter(times.values())))
  print(f"\n### {title}\n")
  print(
    f"| implementation | ms/step (median of {n}) | steps/s | PyTorch time / this | CPU ms/step |"
  )
  print("|---|---:|---:|---:|---:|")
  for k, m in med.items():
    ratio = f"{ref / m:.2f}×" if ref else "–"
    print(f"| {LABELS[k]} | {1e3 * m:.0f} | {1 / m:.2f} | {ratio} | {1e3 * cpu[k]:.0f} |")
  print("\n| implementation | peak memory of the step |\n|---|---|")
  for k, text in memory.items():
    print(f"| {LABELS[k]} | {text} |")
  sys.stdout.flush()


def environment_line(args) -> str:
  import jax
  import torch

  device = torch.device(args.torch_device)
  torch_on = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
  return (
    f"jax {jax.__version__} ({jax.default_backend()}: {jax.devices()[0].device_kind}, "
    f"{os.cpu_count()} cores), torch {torch.__version__} ({torch_on}, "
    f"{torch.get_num_threads()} threads); float32 matmul precision {args.precision}; load "
    "average " + " ".join(f"{x:.1f}" for x in os.getloadavg())
  )


def setup_paths() -> None:
  for path in (ROOT, os.path.join(ROOT, "scripts"), os.path.join(ROOT, "tests", "models")):
    if path not in sys.path:
      sys.path.insert(0, path)


def main(argv=None) -> None:
  args = parse_args(argv)
  if args.xla_flags:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + args.xla_flags).strip()
  setup_paths()
  import jax
  import torch
  from bench_recipe import MARGIN, JitrRunner, memory_text, set_matmul_precision, time_interleaved

  from jitr.models.bert import BertConfig
  from jitr.models.vseinf.convert import official_variables

  start = time.perf_counter()
  set_matmul_precision(args.precision)
  torch.set_num_threads(args.threads or os.cpu_count() or 1)
  print(
    f"VSE∞ train step: batch {args.batch}, {args.regions}×{args.feature_dim} regions, "
    f"{args.tokens} tokens, BERT {args.bert_layers} layers × {args.bert_hidden} "
    f"({args.bert_heads} heads, {args.bert_intermediate} feed-forward, vocab {args.vocab}), "
    f"embed {args.embed_dim}, AdamW {LR} (BERT 0.1×, weight decay 1e-4) + clip 2, triplet "
    f"max-violation margin {MARGIN}; compute dtype {args.dtype}; " + environment_line(args)
  )
  batch = make_batch(args)
  img_enc, txt_enc = official_modules(args)
  bert = BertConfig(
    args.vocab, args.bert_hidden, args.bert_layers, args.bert_heads, args.bert_intermediate
  )
  variables = official_variables(img_enc.state_dict(), txt_enc.state_dict(), bert)
  variables = jax.tree.map(jax.numpy.asarray, variables)
  diff = eval_difference(args, batch, img_enc, txt_enc, variables)
  print(f"largest |jitr − PyTorch| of the eval-mode embeddings (same weights): {diff:.1e}")
  torch_runner = TorchRunner(args, batch, img_enc, txt_enc)  # its memory before JAX's
  jitr = JitrRunner(batch, lambda b: compile_step(args, b, variables, False))
  remat_memory = memory_text(compile_step(args, jitr.batch, variables, True)[0])
  times = time_interleaved(
    [jitr, torch_runner], warmup=args.warmup, rounds=args.rounds, steps=args.steps
  )
  memory = {"jitr": jitr.memory, "jitr, remat": remat_memory, "torch": torch_runner.memory}
  title = f"VSE∞ train step ({args.dtype}, T = {args.tokens}, compile {jitr.compile_s:.0f}s)"
  print_tables(times, memory, title)
  print(f"\n(total {time.perf_counter() - start:.0f}s)")


if __name__ == "__main__":
  main()
