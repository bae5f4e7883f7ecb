#!/usr/bin/env python
"""Benchmark: the VSE++† train step, jitr vs plain Flax vs PyTorch, side by side.

One step of VSE++† (batch 128 pairs, 36 × 2048 region features -> Dense 1024 +
max-pool + L2; captions -> Embed 300 -> GRU 1024, last valid state, L2;
sim = img @ txt.T; VSE++ max-violation triplet (LMH, margin 0.2, both
directions); Adam lr 2e-4 after global-norm clipping at 2.0), three ways:

* ``jitr``: ``create_dual_encoder`` + ``make_train_step(axis_name=None)`` +
  ``make_optimizer`` + ``losses.objective``; ``jax.jit(donate_argnums=(0,))``.
  The batch is trimmed to its longest caption (``bucket_length``) before the
  step, so the GRU scans only as far as needed.
* ``flax nn.RNN``: the same everything, with the text GRU written the plain way
  (``nn.RNN(nn.GRUCell(1024))`` with ``seq_lengths``) — the issue's reference.
* ``pytorch``: the same model in torch (``nn.Linear`` + max + L2;
  ``nn.Embedding`` + ``nn.GRU`` over ``pack_padded_sequence``; the same loss;
  ``clip_grad_norm_(2.0)``; ``torch.optim.Adam``), ``torch.set_num_threads``.

All implementations run in one process and are timed in interleaved rounds
(``--rounds`` rounds of ``--steps`` steps each, after ``--warmup`` steps), so
load from anything else on the machine hits them alike; the table reports the
median step time, steps/s and the ratio against PyTorch. Every JAX step is
waited for (``block_until_ready``) and every torch step is synchronous.

``--profile`` also times forward-only and forward+backward pieces of each
implementation (image tower, text tower, whole step) to show where time goes.

On a shared machine PyTorch's OpenMP threads busy-wait at every barrier by
default, which makes its GRU several times slower whenever the cores are
oversubscribed; ``OMP_WAIT_POLICY=passive`` (set in the environment, it must be
set before torch starts) removes that effect and gives the fair comparison.
The header line prints the load average at the start.

Usage::

    python scripts/bench_train.py                  # fixed length 12 + variable 8..12
    OMP_WAIT_POLICY=passive python scripts/bench_train.py
    python scripts/bench_train.py --profile --min_length 0
    python scripts/bench_train.py --only jitr,jitr_unrolled,torch --rounds 5 --steps 4
    python scripts/bench_train.py --model=sgr --torch_device=cuda   # both on a GPU
    python scripts/bench_train.py --model=sgr --memory_only --variants=full:8:8,none:8:8
    python scripts/bench_train.py --model=cvse
    python scripts/bench_train.py --model=vseinf --torch_device=cuda   # scripts/bench_vseinf.py
    .venv-open-clip/bin/python scripts/bench_train.py --model=clip     # scripts/bench_clip.py

``--model=vseinf`` (VSE∞ with BERT) runs scripts/bench_vseinf.py with the other arguments
(its own options: ``--bert_layers``, ``--tokens``, ...), before anything below is imported;
``--model=clip`` runs scripts/bench_clip.py (the CLIP step beside open_clip's: run it with
the environment of .ci/open_clip_parity.sh, which has open_clip).

On a GPU, ``--torch_device=cuda`` puts PyTorch there too (JAX takes the GPU by itself
when its CUDA plugin is installed) and ``--precision`` sets one float32 matmul
precision for both (``highest``: true float32, PyTorch's default; JAX's own default
there lets XLA use TF32).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np


def _parse_args(argv=None):
  p = argparse.ArgumentParser(
    description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
  )
  p.add_argument(
    "--model",
    default="vsepp",
    choices=("vsepp", "sgr", "saf", "vsrn", "cvse", "vseinf", "clip"),
    help="vsepp: the three-way VSE++† bench below; sgr / saf / vsrn / cvse: jitr vs PyTorch "
    "(scripts/bench_models.py); vseinf: VSE∞ with BERT (scripts/bench_vseinf.py); clip: "
    "the CLIP fine-tuning step vs open_clip's (scripts/bench_clip.py)",
  )
  p.add_argument(
    "--tiny", action="store_true", help="tiny sizes (a smoke run: batch 8, 5 regions x 16)"
  )
  p.add_argument("--batch", type=int, default=128)
  p.add_argument("--regions", type=int, default=36)
  p.add_argument("--feature_dim", type=int, default=2048)
  p.add_argument("--embed_dim", type=int, default=0, help="0: 1024 (VSE++, SGR, SAF), 2048 (VSRN)")
  p.add_argument("--sim_dim", type=int, default=256, help="SGR / SAF similarity vectors")
  p.add_argument("--word_dim", type=int, default=300)
  p.add_argument("--vocab", type=int, default=10000)
  p.add_argument(
    "--concepts", type=int, default=300, help="CVSE: concepts (and their vectors' width)"
  )
  p.add_argument("--length", type=int, default=12, help="caption length of the fixed-length batch")
  p.add_argument(
    "--min_length",
    type=int,
    default=8,
    help="variable-length batch: lengths uniform in [min_length, length]; "
    "0 skips the variable-length table",
  )
  p.add_argument(
    "--threads",
    type=int,
    default=0,
    help="torch intra-op threads (0: all cores; XLA's CPU client always uses all cores)",
  )
  p.add_argument("--warmup", type=int, default=1, help="untimed steps after the compiling one")
  p.add_argument(
    "--rounds", type=int, default=0, help="interleaved timing rounds (0: 3 VSE++, 2 others)"
  )
  p.add_argument(
    "--steps",
    type=int,
    default=0,
    help="timed steps per implementation per round (0: 3 VSE++, 2 others)",
  )
  p.add_argument(
    "--only",
    default="",
    help="comma list of jitr, jitr_unrolled, flax, torch (default: jitr,flax,torch for "
    "VSE++, jitr,torch for the others)",
  )
  p.add_argument(
    "--eval",
    action="store_true",
    help="sgr / saf: also time evaluation scoring (pairs/s) on eval_images x eval_captions",
  )
  p.add_argument("--eval_images", type=int, default=100)
  p.add_argument("--eval_captions", type=int, default=500)
  p.add_argument("--eval_block", type=int, default=100, help="jitr score_split block size")
  p.add_argument(
    "--shapes_lengths",
    action="store_true",
    help="caption lengths drawn from jitr_shapes' captions (mean 11 words, 10%% over 19), "
    "cut at --length, instead of uniform in [--min_length, --length]",
  )
  p.add_argument(
    "--variants",
    default="",
    help="sgr / saf: comma list of jitr variants REMAT:LENGTH_BUCKETS[:BLOCK_SIZE] timed side "
    "by side, e.g. full:1,full:8:8 (REMAT full / dots / none; default: the model's defaults)",
  )
  p.add_argument(
    "--torch_device",
    default="cpu",
    help="where PyTorch runs: cpu, or cuda to compare on a GPU (JAX runs on its default "
    "backend, which is the GPU when jax has CUDA)",
  )
  p.add_argument(
    "--precision",
    default="highest",
    choices=("highest", "tf32"),
    help="float32 matrix products in both frameworks: highest (true float32) or tf32 "
    "(tensor cores; JAX's own GPU default, not PyTorch's)",
  )
  p.add_argument("--profile", action="store_true", help="also time forward / backward pieces")
  p.add_argument(
    "--memory_only",
    action="store_true",
    help="sgr / saf / vsrn: compile jitr's step for each --variants entry and print its XLA "
    "memory analysis (no PyTorch, no timing)",
  )
  p.add_argument("--xla_flags", default=None, help="extra XLA_FLAGS (set before jax is imported)")
  args = p.parse_args(argv)
  vsepp = args.model == "vsepp"
  args.embed_dim = args.embed_dim or (2048 if args.model == "vsrn" else 1024)
  args.rounds = args.rounds or (3 if vsepp else 2)
  args.steps = args.steps or (3 if vsepp else 2)
  args.only = args.only or ("jitr,flax,torch" if vsepp else "jitr,torch")
  if args.tiny:
    args.batch, args.regions, args.feature_dim, args.vocab = 8, 5, 16, 50
    args.embed_dim, args.word_dim, args.length, args.min_length = 16, 8, 6, 3
    args.eval_images, args.eval_captions, args.eval_block = 4, 8, 4
    args.concepts = 7
  return args


def _delegated_model(argv: list[str]) -> str:
  """``--model``'s value when it names a bench with its own script (``vseinf``, ``clip``),
  else ""."""
  p = argparse.ArgumentParser(add_help=False)
  p.add_argument("--model", default="")
  model = p.parse_known_args(argv)[0].model
  return model if model in ("vseinf", "clip") else ""


if __name__ == "__main__" and _delegated_model(sys.argv[1:]):
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  import importlib

  # bench_vseinf, bench_clip: no TensorFlow, no ml_collections
  bench = importlib.import_module(f"bench_{_delegated_model(sys.argv[1:])}")
  bench.main(sys.argv[1:])
  sys.exit(0)

ARGS = _parse_args()
_threads = ARGS.threads or os.cpu_count() or 1
if ARGS.xla_flags:
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + ARGS.xla_flags).strip()

import flax.linen as nn  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_recipe import (  # noqa: E402
  CLIP,
  LR,
  MARGIN,
  OBJECTIVE,
  OPTIMIZER,
  set_matmul_precision,
  time_interleaved,
  torch_triplet,
)

from jitr import losses, models, training  # noqa: E402
from jitr.data.vocab import bucket_length  # noqa: E402
from jitr.models.vse import dual_encoder_model  # noqa: E402

set_matmul_precision(ARGS.precision)
TORCH_DEVICE = torch.device(ARGS.torch_device)

# ----------------------------------------------------------------------------- data


def shapes_caption_lengths() -> np.ndarray:
  """Word counts (punctuation included) of 5,000 jitr_shapes train captions (100 with
  ``--tiny``)."""
  from jitr.data.shapes import make_split

  captions = make_split(0, "train", 20 if ARGS.tiny else 1000)["captions"]
  return np.array([len(c.replace(",", " ,").split()) for c in captions])


def draw_lengths(rng: np.random.Generator, n: int, min_length: int, max_length: int):
  """``n`` caption lengths: uniform in ``[min_length, max_length]``, or with
  ``--shapes_lengths`` jitr_shapes' caption lengths cut at ``max_length``."""
  if ARGS.shapes_lengths:
    return np.minimum(rng.choice(shapes_caption_lengths(), n), max_length).astype(np.int32)
  return rng.integers(min_length, max_length + 1, n).astype(np.int32)


def make_batch(
  rng: np.random.Generator, *, min_length: int, max_length: int
) -> dict[str, np.ndarray]:
  """One VSE++ batch: B (image, caption) pairs of distinct images; tokens padded with 0."""
  b = ARGS.batch
  lengths = draw_lengths(rng, b, min_length, max_length)
  t = np.arange(max_length)[None, :]
  tokens = rng.integers(1, ARGS.vocab, (b, max_length)).astype(np.int32) * (t < lengths[:, None])
  images = rng.standard_normal((b, ARGS.regions, ARGS.feature_dim)).astype(np.float32)
  return {
    "images": images,
    "tokens": tokens.astype(np.int32),
    "lengths": lengths,
    "image_ids": np.arange(b, dtype=np.int32),
  }


def trim(
  batch: dict[str, np.ndarray], buckets=(8, 12, 16, 24, 32, 48, 64)
) -> dict[str, np.ndarray]:
  """Host-side: cut the caption axis to the batch's bucketed longest caption."""
  t = bucket_length(batch["lengths"], buckets)
  return {**batch, "tokens": batch["tokens"][:, :t]}


# ----------------------------------------------------------------------------- JAX


class FlaxRNNTextEncoder(nn.Module):
  """The plain Flax way: ``Embed -> nn.RNN(nn.GRUCell)`` with ``seq_lengths`` -> L2."""

  vocab_size: int
  word_dim: int
  embed_dim: int

  @nn.compact
  def __call__(self, tokens, lengths):
    x = nn.Embed(self.vocab_size, self.word_dim, name="embed")(tokens)
    carry, _ = nn.RNN(nn.GRUCell(self.embed_dim), return_carry=True, name="rnn")(
      x, seq_lengths=lengths
    )
    return losses.l2_normalize(carry)


def build_jax(kind: str, batch: dict[str, np.ndarray]):
  """``(model, step, state)`` with ``step = jit(make_train_step(...), donate_argnums=0)``."""
  if kind in ("jitr", "jitr_unrolled"):
    unroll = batch["tokens"].shape[1] if kind == "jitr_unrolled" else 1
    model = models.create_dual_encoder(
      vocab_size=ARGS.vocab,
      image="regions",
      text="gru",
      embed_dim=ARGS.embed_dim,
      word_dim=ARGS.word_dim,
      image_pooling="max",
      text_pooling="last",
      unroll=unroll,
    )
  elif kind == "flax":
    model = models.DualEncoder(
      image_encoder=models.RegionEncoder(embed_dim=ARGS.embed_dim, pooling="max"),
      text_encoder=FlaxRNNTextEncoder(ARGS.vocab, ARGS.word_dim, ARGS.embed_dim),
    )
  else:
    raise ValueError(kind)
  retrieval = dual_encoder_model(model)
  tx = training.make_optimizer(OPTIMIZER, steps_per_epoch=1000)
  state = training.create_train_state(
    jax.jit(retrieval.init)(jax.random.key(0), batch), tx, jax.random.key(1)
  )
  step = jax.jit(
    training.make_train_step(losses.objective(OBJECTIVE), model=retrieval, axis_name=None),
    donate_argnums=(0,),
  )
  return model, step, state


class JaxRunner:
  def __init__(self, kind: str, batch: dict[str, np.ndarray]):
    self.kind = kind
    self.model, self.step, self.state = build_jax(kind, batch)
    self.batch = jax.device_put(batch)  # on device once: the step has no host round-trips

  def run(self) -> float:
    self.state, metrics = self.step(self.state, self.batch)
    return metrics["loss"]

  def sync(self, out) -> float:
    return float(jax.block_until_ready(out))


# ----------------------------------------------------------------------------- PyTorch


class TorchVSE(torch.nn.Module):
  def __init__(self):
    super().__init__()
    self.fc = torch.nn.Linear(ARGS.feature_dim, ARGS.embed_dim)
    self.embed = torch.nn.Embedding(ARGS.vocab, ARGS.word_dim)
    self.gru = torch.nn.GRU(ARGS.word_dim, ARGS.embed_dim, batch_first=True)

  def encode_image(self, images):
    x = self.fc(images).max(dim=1).values
    return torch.nn.functional.normalize(x, dim=-1)

  def encode_text(self, tokens, lengths):
    x = self.embed(tokens)
    packed = torch.nn.utils.rnn.pack_padded_sequence(
      x, lengths, batch_first=True, enforce_sorted=False
    )
    _, h = self.gru(packed)  # h: [1, B, H], the state after each caption's last token
    return torch.nn.functional.normalize(h[0], dim=-1)

  def forward(self, images, tokens, lengths):
    return self.encode_image(images), self.encode_text(tokens, lengths)


class TorchRunner:
  kind = "torch"

  def __init__(self, batch: dict[str, np.ndarray]):
    torch.manual_seed(0)
    self.model = TorchVSE().to(TORCH_DEVICE)
    self.opt = torch.optim.Adam(self.model.parameters(), lr=LR)
    self.set_batch(batch)

  def set_batch(self, batch: dict[str, np.ndarray]) -> None:
    self.images = torch.from_numpy(batch["images"]).to(TORCH_DEVICE)
    self.tokens = torch.from_numpy(batch["tokens"]).long().to(TORCH_DEVICE)
    self.lengths = torch.from_numpy(batch["lengths"]).long()  # CPU lengths, as pack wants

  def run(self) -> torch.Tensor:
    self.opt.zero_grad(set_to_none=True)
    img, txt = self.model(self.images, self.tokens, self.lengths)
    loss = torch_triplet(img @ txt.T)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(self.model.parameters(), CLIP)
    self.opt.step()
    return loss

  def sync(self, out) -> float:
    return float(out.detach())


# ----------------------------------------------------------------------------- timing

LABELS = {
  "jitr": "jitr (`create_dual_encoder` GRU)",
  "jitr_unrolled": "jitr, GRU scan fully unrolled (`unroll=T`)",
  "flax": "plain Flax `nn.RNN(GRUCell)`",
  "torch": "PyTorch (`nn.GRU`, packed)",
}


def print_table(title: str, times: dict[str, list[tuple[float, float]]]) -> None:
  """Wall time is what a user waits; CPU time (all threads) is less sensitive to
  other processes on a shared machine, but counts busy-waiting threads."""
  med = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
  cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
  ref = next((m for k, m in med.items() if k.startswith("torch")), None)
  n = len(next(iter(times.values())))
  print(f"\n### {title}\n")
  print(
    f"| implementation | ms/step (median of {n}) | steps/s | PyTorch time / this | CPU ms/step |"
  )
  print("|---|---:|---:|---:|---:|")
  for k, m in med.items():
    ratio = f"{ref / m:.2f}×" if ref else "–"
    print(f"| {LABELS[k]} | {1e3 * m:.0f} | {1 / m:.2f} | {ratio} | {1e3 * cpu[k]:.0f} |")
  sys.stdout.flush()


def _median_ms(fn, sync, n=5) -> float:
  sync(fn())
  sync(fn())
  ts = []
  for _ in range(n):
    t0 = time.perf_counter()
    sync(fn())
    ts.append(time.perf_counter() - t0)
  return 1e3 * statistics.median(ts)


def profile(jax_runners, torch_runner, batch) -> None:
  """Forward-only and forward+backward times of each tower, per implementation."""
  rows = []
  jsync = lambda x: jax.block_until_ready(x)
  for r in jax_runners:
    p = r.state.params
    b = r.batch
    m = r.model
    img_f = jax.jit(lambda p, b: m.apply({"params": p}, b["images"], method="encode_image"))
    txt_f = jax.jit(
      lambda p, b: m.apply({"params": p}, b["tokens"], b["lengths"], method="encode_text")
    )
    img_g = jax.jit(
      jax.grad(lambda p, b: jnp.sum(m.apply({"params": p}, b["images"], method="encode_image")))
    )
    txt_g = jax.jit(
      jax.grad(
        lambda p, b: jnp.sum(
          m.apply({"params": p}, b["tokens"], b["lengths"], method="encode_text")
        )
      )
    )
    rows.append(
      (
        r.kind,
        _median_ms(lambda: img_f(p, b), jsync),
        _median_ms(lambda: img_g(p, b), jsync),
        _median_ms(lambda: txt_f(p, b), jsync),
        _median_ms(lambda: txt_g(p, b), jsync),
      )
    )
  if torch_runner is not None:
    tm = torch_runner.model
    ti, tt, tl = torch_runner.images, torch_runner.tokens, torch_runner.lengths

    def fwd_img():
      with torch.no_grad():
        return tm.encode_image(ti)

    def fwd_txt():
      with torch.no_grad():
        return tm.encode_text(tt, tl)

    def grad(f):
      def g():
        tm.zero_grad(set_to_none=True)
        out = f().sum()
        out.backward()
        return out

      return g

    ts = lambda x: float(x.sum().detach())
    rows.append(
      (
        "torch",
        _median_ms(fwd_img, ts),
        _median_ms(grad(lambda: tm.encode_image(ti)), ts),
        _median_ms(fwd_txt, ts),
        _median_ms(grad(lambda: tm.encode_text(tt, tl)), ts),
      )
    )
  print("\n### Where the time goes (ms, median of 5; grad = forward + backward w.r.t. params)\n")
  print("| implementation | image fwd | image grad | text fwd | text grad |")
  print("|---|---:|---:|---:|---:|")
  for kind, *vals in rows:
    print(f"| {LABELS[kind]} | " + " | ".join(f"{v:.0f}" for v in vals) + " |")
  b, k, d, e, w = ARGS.batch, ARGS.regions, ARGS.feature_dim, ARGS.embed_dim, ARGS.word_dim
  t = batch["tokens"].shape[1]
  gf_img = 2 * b * k * d * e / 1e9
  gf_txt = (2 * b * t * w * 3 * e + t * 2 * b * e * 3 * e) / 1e9
  print(
    f"\nforward matmul work: image {gf_img:.1f} GFLOP, text {gf_txt:.1f} GFLOP "
    f"(T = {t}); a train step is about 2× (image: weight grads only) to 3× (text) that."
  )


def build_runners(batch: dict[str, np.ndarray], kinds: list[str]):
  runners = []
  jax_batch = trim(batch)
  for kind in kinds:
    if kind == "torch":
      continue
    t0 = time.perf_counter()
    runners.append(JaxRunner(kind, jax_batch))
    runners[-1].sync(runners[-1].run())  # compile
    print(f"  compiled {kind} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
  if "torch" in kinds:
    runners.append(TorchRunner(batch))
  return runners


def set_batch(runners, batch: dict[str, np.ndarray]) -> None:
  """Same model and optimizer state, new data (same shapes after trimming: no recompile)."""
  jax_batch = trim(batch)
  for r in runners:
    if isinstance(r, JaxRunner):
      r.batch = jax.device_put(jax_batch)
    else:
      r.set_batch(batch)


def print_memory(runners) -> None:
  print("\n| implementation | peak memory of the step |\n|---|---|")
  for r in runners:
    print(f"| {LABELS[r.kind]} | {r.memory} |")
  sys.stdout.flush()


def environment_line() -> str:
  """Versions, devices, threads, precision, the relevant environment and the load."""
  torch_on = torch.cuda.get_device_name(TORCH_DEVICE) if TORCH_DEVICE.type == "cuda" else "cpu"
  return (
    f"jax {jax.__version__} ({jax.default_backend()}: {jax.devices()[0].device_kind}, "
    f"{os.cpu_count()} cores), torch {torch.__version__} ({torch_on}, "
    f"{torch.get_num_threads()} threads); float32 matmul precision {ARGS.precision}; "
    f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}, "
    f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '')!r}; load average "
    + " ".join(f"{x:.1f}" for x in os.getloadavg())
  )


def main_models() -> None:
  """``--model=sgr|saf|vsrn|cvse``: jitr vs the PyTorch reference, interleaved, + peak memory."""
  import bench_models

  LABELS.update(bench_models.LABELS)
  start = time.perf_counter()
  torch.set_num_threads(_threads)
  kinds = [k.strip() for k in ARGS.only.split(",") if k.strip()]
  if not kinds or set(kinds) - {"jitr", "torch"}:
    raise SystemExit(f"--only for --model={ARGS.model}: expected some of jitr, torch")
  print(
    f"{ARGS.model.upper()} train step: batch {ARGS.batch}, {ARGS.regions}×{ARGS.feature_dim} "
    f"regions, sizes {bench_models.sizes(ARGS)}, vocab {ARGS.vocab}, captions "
    + (
      f"jitr_shapes' lengths cut at {ARGS.length}"
      if ARGS.shapes_lengths
      else f"{ARGS.min_length or ARGS.length}–{ARGS.length} tokens"
    )
    + f", Adam {LR} + clip {CLIP}, triplet max-violation margin {MARGIN}; "
    + environment_line()
  )
  rng = np.random.default_rng(0)
  batch = trim(make_batch(rng, min_length=ARGS.min_length or ARGS.length, max_length=ARGS.length))
  if ARGS.model == "cvse":  # each image's concept labels (multi-hot)
    batch["concept_labels"] = (rng.uniform(size=(ARGS.batch, ARGS.concepts)) < 0.05).astype(
      np.float32
    )
  runners = bench_models.build_runners(ARGS, batch, ["jitr"] if ARGS.memory_only else kinds)
  LABELS.update(bench_models.LABELS)  # the --variants' labels
  if ARGS.memory_only:
    return print_memory(runners)
  times = time_interleaved(
    runners, warmup=ARGS.warmup, rounds=ARGS.rounds, steps=ARGS.steps, log=True
  )
  print_table(f"{ARGS.model.upper()} train step (T = {batch['tokens'].shape[1]})", times)
  print_memory(runners)
  if ARGS.profile:
    bench_models.profile(runners)
  if ARGS.eval and ARGS.model in ("sgr", "saf"):

    def split_batch(n_img: int, n_cap: int) -> dict[str, np.ndarray]:
      images = rng.standard_normal((n_img, ARGS.regions, ARGS.feature_dim)).astype(np.float32)
      lengths = draw_lengths(rng, n_cap, ARGS.min_length or ARGS.length, ARGS.length)
      t = np.arange(ARGS.length)[None, :]
      tokens = rng.integers(1, ARGS.vocab, (n_cap, ARGS.length)) * (t < lengths[:, None])
      return {"images": images, "tokens": tokens.astype(np.int32), "lengths": lengths}

    bench_models.bench_eval(ARGS, runners, split_batch)
  print(
    f"\n(total {time.perf_counter() - start:.0f}s; load average now "
    + " ".join(f"{x:.1f}" for x in os.getloadavg())
    + ")"
  )


def main() -> None:
  if ARGS.model != "vsepp":
    return main_models()
  start = time.perf_counter()
  torch.set_num_threads(_threads)
  kinds = [k.strip() for k in ARGS.only.split(",") if k.strip()]
  unknown = set(kinds) - set(LABELS)
  if unknown:
    raise SystemExit(f"--only: unknown {sorted(unknown)}; expected some of {sorted(LABELS)}")
  print(
    f"VSE++† train step: batch {ARGS.batch}, {ARGS.regions}×{ARGS.feature_dim} regions, "
    f"embed {ARGS.embed_dim}, word {ARGS.word_dim}, vocab {ARGS.vocab}, Adam + clip {CLIP}; "
    + environment_line()
  )
  rng = np.random.default_rng(0)
  fixed = make_batch(rng, min_length=ARGS.length, max_length=ARGS.length)
  runners = build_runners(fixed, kinds)
  times = time_interleaved(
    runners, warmup=ARGS.warmup, rounds=ARGS.rounds, steps=ARGS.steps, log=True
  )
  print_table(f"Fixed-length captions (T = {ARGS.length})", times)
  if ARGS.profile:
    profile(
      [r for r in runners if isinstance(r, JaxRunner)],
      next((r for r in runners if isinstance(r, TorchRunner)), None),
      trim(fixed),
    )
  if ARGS.min_length:
    var = make_batch(rng, min_length=ARGS.min_length, max_length=ARGS.length)
    set_batch(runners, var)
    t = trim(var)["tokens"].shape[1]
    times = time_interleaved(runners, warmup=1, rounds=ARGS.rounds, steps=ARGS.steps, log=True)
    print_table(
      f"Variable-length captions ({ARGS.min_length}–{ARGS.length} tokens, mean "
      f"{var['lengths'].mean():.1f}; JAX batch trimmed to T = {t}, torch packed)",
      times,
    )
  print(
    f"\n(total {time.perf_counter() - start:.0f}s; load average now "
    + " ".join(f"{x:.1f}" for x in os.getloadavg())
    + ")"
  )


if __name__ == "__main__":
  main()
