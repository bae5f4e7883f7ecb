"""SGR / SAF / VSRN / CVSE runners for ``scripts/bench_train.py --model=sgr|saf|vsrn|cvse``.

Each runner has ``kind``, ``run()`` (one train step, returns the loss unsynchronised),
``sync(out) -> float`` and ``memory`` (a text: peak memory and how it was measured).

* ``jitr``: ``make_model(config)`` (the registry) + ``make_train_step(axis_name=None)`` +
  ``make_optimizer`` (Adam 2e-4, global-norm clip 2) + the max-violation triplet
  (margin 0.2, both directions; CVSE: + its instance / consensus triplets and concept KL,
  the official 3 : 5 : 1 : 2), ``jax.jit(donate_argnums=0)``. Memory: XLA's
  ``memory_analysis()`` of the compiled step, temp + argument bytes.
* ``torch``: the PyTorch references of the parity tests (``tests/models/sgraf_reference.py``,
  ``tests/models/vsrn_reference.py``, written from the official code's equations;
  ``tests/models/cvse_reference.py``, the official CVSE modules transcribed, run as its
  ``forward_emb`` + ``forward_loss`` on the batch sorted by length, as the official loader
  sorts it for ``pack_padded_sequence``; SGRAF's ``EncoderSimilarity`` loops over the
  captions in Python as the official one does, so autograd keeps every caption's
  activations) at the official sizes, in train mode
  (dropout on), plus what training adds: the same loss (VSRN: + the caption NLL, mean
  over the batch), ``clip_grad_norm_(2)``, ``torch.optim.Adam(2e-4)``. Memory: the
  process's ``ru_maxrss`` growth over its first two steps, measured before any JAX
  step runs (so JAX's buffers do not hide it; the parameters, Adam state and batch
  allocated before are not in it); with ``--torch_device=cuda``,
  ``torch.cuda.max_memory_allocated`` over those steps (all of it).

``bench_eval`` times evaluation scoring (pairs/s): jitr's ``score_split`` against the
official ``shard_attn_scores`` style (``torch.no_grad``, eval mode, shards of 100 images
× 100 captions, each scored by the per-caption loop).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import torch

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, _ROOT)
sys.path.insert(0, os.path.join(_ROOT, "tests", "models"))

import cvse_reference  # noqa: E402
import jax  # noqa: E402
import sgraf_reference  # noqa: E402
import vsrn_reference  # noqa: E402
from bench_recipe import (  # noqa: E402
  CLIP,
  LR,
  OBJECTIVE,
  OPTIMIZER,
  gib,
  torch_peak_memory,
  torch_triplet,
)

from jitr import losses, training  # noqa: E402
from jitr.data import pairs  # noqa: E402
from jitr.models.cvse.adapter import ConceptInputs  # noqa: E402
from jitr.models.registry import make_model  # noqa: E402
from jitr.training.score_split import SplitScorer  # noqa: E402

DROPOUT = 0.4  # SGRAF's text and self-attention dropout
CAPTION_DROPOUT = 0.2  # VSRN's captioning branch

LABELS = {
  "jitr_sgr": "jitr SGR (`make_model` + `make_train_step`)",
  "torch_sgr": "PyTorch SGR, official per-caption loop",
  "jitr_saf": "jitr SAF (`make_model` + `make_train_step`)",
  "torch_saf": "PyTorch SAF, official per-caption loop",
  "jitr_vsrn": "jitr VSRN (`make_model` + `make_train_step`)",
  "torch_vsrn": "PyTorch VSRN (same model)",
  "jitr_cvse": "jitr CVSE (`make_model` + `make_train_step`)",
  "torch_cvse": "PyTorch CVSE (official modules)",
}
FUSE_ALPHA = 0.85  # CVSE's training fusion weight


def sizes(args) -> dict[str, int]:
  """The model sizes: official (embed 1024 / sim 256 for SGRAF, 2048 for VSRN) or tiny."""
  if args.tiny:
    return dict(embed=16, sim=8, word=8, caption_hidden=8, caption_word=8)
  embed = args.embed_dim or (2048 if args.model == "vsrn" else 1024)
  if args.model == "cvse":
    return dict(embed=embed, word=args.word_dim)
  return dict(embed=embed, sim=args.sim_dim, word=args.word_dim, caption_hidden=512,
              caption_word=300)  # fmt: skip


def jitr_config(args, variant: str = "") -> dict:
  """The registry config of the bench's network; ``variant`` (SGR / SAF) is
  ``REMAT:LENGTH_BUCKETS[:BLOCK_SIZE]`` (e.g. ``full:1``: the whole block recomputed,
  every caption at the padded length), empty for the model's defaults."""
  s = sizes(args)
  if args.model == "cvse":
    return dict(
      name="cvse",
      img_dim=args.feature_dim,
      word_dim=s["word"],
      embed_dim=s["embed"],
      num_region=args.regions,
      dropout=DROPOUT,
    )
  if args.model == "vsrn":
    return dict(
      name="vsrn",
      embed_dim=s["embed"],
      word_dim=s["word"],
      caption_hidden_dim=s["caption_hidden"],
      caption_word_dim=s["caption_word"],
      caption_dropout=CAPTION_DROPOUT,
      dataset="coco",
    )
  return dict(
    name=args.model,
    img_dim=args.feature_dim,
    word_dim=s["word"],
    embed_dim=s["embed"],
    sim_dim=s["sim"],
    num_region=args.regions,
    text_dropout=DROPOUT,
    sa_dropout=DROPOUT,
    **parse_variant(variant),
  )


def parse_variant(variant: str) -> dict:
  """``"REMAT:BUCKETS[:BLOCK]"``, e.g. ``"dots:4:16"`` -> ``{"remat": "dots",
  "length_buckets": 4, "block_size": 16}``; ``""`` -> ``{}`` (the model's defaults)."""
  if not variant:
    return {}
  remat, buckets, *block = variant.split(":")
  config = {"remat": remat, "length_buckets": int(buckets)}
  if block:
    config["block_size"] = int(block[0])
  return config


def concept_graph_inputs(args) -> ConceptInputs:
  """Random concept statistics of ``args.concepts`` concepts (word vectors of that width,
  as GloVe's 300 for 300 concepts), the same for both frameworks."""
  rng = np.random.default_rng(1)
  c = args.concepts
  co = rng.integers(0, 50, (c, c))
  co = np.triu(co, 1) + np.triu(co, 1).T
  counts = co.max(axis=1) + rng.integers(1, 50, c)
  return ConceptInputs(rng.standard_normal((c, c)).astype(np.float32), co, counts)


# ----------------------------------------------------------------------------- JAX


class JitrRunner:
  def __init__(self, args, batch: dict[str, np.ndarray], variant: str = ""):
    self.kind = f"jitr_{args.model}" + (f"[{variant}]" if variant else "")
    if variant:
      v = parse_variant(variant)
      block = f", blocks of {v['block_size']}" if "block_size" in v else ""
      LABELS[self.kind] = (
        f"jitr {args.model.upper()}, remat `{v['remat']}`, {v['length_buckets']} length "
        f"bucket(s){block}"
      )
    concepts = concept_graph_inputs(args) if args.model == "cvse" else None
    self.model = make_model(jitr_config(args, variant), args.vocab, {"concepts": concepts})
    tx = training.make_optimizer(OPTIMIZER, steps_per_epoch=1000)
    self.batch = jax.device_put(batch)
    variables = jax.jit(self.model.init)(jax.random.key(0), self.batch)
    self.state = training.create_train_state(variables, tx, jax.random.key(1))
    step = training.make_train_step(losses.objective(OBJECTIVE), model=self.model, axis_name=None)
    t0 = time.perf_counter()
    self.step = jax.jit(step, donate_argnums=(0,)).lower(self.state, self.batch).compile()
    self.compile_s = time.perf_counter() - t0
    m = self.step.memory_analysis()
    self.memory = (
      f"{gib(m.temp_size_in_bytes + m.argument_size_in_bytes)} "
      f"(XLA memory_analysis: temp {gib(m.temp_size_in_bytes)} + "
      f"arguments {gib(m.argument_size_in_bytes)})"
    )

  def run(self):
    self.state, metrics = self.step(self.state, self.batch)
    return metrics["loss"]

  def sync(self, out) -> float:
    return float(jax.block_until_ready(out))

  def variables(self) -> dict:
    return {"params": self.state.params, **self.state.model_state}


# ----------------------------------------------------------------------------- PyTorch


def torch_sgraf_parts(args) -> torch.nn.ModuleList:
  """``[img_enc, txt_enc, sim_enc]`` of the reference at the bench's sizes."""
  s = sizes(args)
  sgraf_reference.DIMS.update(
    img_dim=args.feature_dim,
    word_dim=s["word"],
    embed_dim=s["embed"],
    sim_dim=s["sim"],
    num_region=args.regions,
  )
  sgraf_reference.VOCAB = args.vocab
  torch.manual_seed(0)
  ref = sgraf_reference
  module = args.model.upper()
  return torch.nn.ModuleList(
    [ref.TImage(), ref.TText(DROPOUT), ref.TSimilarity(module, 3, DROPOUT)]
  )


def torch_vsrn_parts(args) -> torch.nn.ModuleList:
  """``[img_enc, txt_enc, caption_model]`` of the reference (COCO options)."""
  s = sizes(args)
  vsrn_reference.DIMS.update(
    img_dim=args.feature_dim,
    word_dim=s["word"],
    embed_dim=s["embed"],
    caption_hidden_dim=s["caption_hidden"],
    caption_word_dim=s["caption_word"],
  )
  vsrn_reference.VOCAB = args.vocab
  torch.manual_seed(0)
  ref = vsrn_reference
  return torch.nn.ModuleList(
    [ref.TImage(f30k=False), ref.TText(), ref.TS2VTAttModel(CAPTION_DROPOUT)]
  )


def torch_cvse(args) -> cvse_reference.CVSE:
  """The official CVSE modules (``use_BatchNorm``, tanh, dropout 0.4) on the bench's graph."""
  from jitr.models.cvse.graph import concept_adjacency

  s = sizes(args)
  concepts = concept_graph_inputs(args)
  adj_all = concept_adjacency(concepts.co_occurrence, concepts.counts)  # gen_A_concept
  torch.manual_seed(0)
  return cvse_reference.CVSE(
    args.vocab,
    args.feature_dim,
    s["word"],
    s["embed"],
    args.regions,
    args.concepts,
    torch.tensor(adj_all, dtype=torch.float32),
    dropout_rate=DROPOUT,
  )


class TorchRunner:
  def __init__(self, args, batch: dict[str, np.ndarray]):
    self.kind = f"torch_{args.model}"
    self.vsrn = args.model == "vsrn"
    self.cvse = args.model == "cvse"
    if self.cvse:  # the official collate_fn sorts a batch by caption length
      order = np.argsort(-batch["lengths"], kind="stable")
      batch = {k: v[order] for k, v in batch.items()}
      self.parts = torch.nn.ModuleList([torch_cvse(args)])
      self.labels = torch.from_numpy(batch["concept_labels"])
      vectors = concept_graph_inputs(args).vectors
      self.concept_inputs = torch.from_numpy(
        np.broadcast_to(vectors, (len(order), *vectors.shape)).copy()
      )
    elif self.vsrn:
      self.parts = torch_vsrn_parts(args)
    else:
      self.parts = torch_sgraf_parts(args)
    self.device = torch.device(args.torch_device)
    self.parts.to(self.device).train()
    self.opt = torch.optim.Adam(self.parts.parameters(), lr=LR)
    self.images = torch.from_numpy(batch["images"]).to(self.device)
    self.tokens = torch.from_numpy(batch["tokens"]).long().to(self.device)
    self.lengths = [int(n) for n in batch["lengths"]]  # host ints, as packing wants
    t = self.tokens.shape[1]
    lengths = torch.tensor(self.lengths, device=self.device)
    self.mask = (torch.arange(t, device=self.device)[None] < lengths[:, None]).float()
    self.memory = torch_peak_memory(self.device, lambda: [self.sync(self.run()) for _ in range(2)])

  def loss(self) -> torch.Tensor:
    if self.cvse:
      (model,) = self.parts
      v, t, pv, pt = model.forward_emb(
        self.images, self.tokens, self.labels.to(self.device),
        self.concept_inputs.to(self.device), self.lengths, FUSE_ALPHA,
      )  # fmt: skip
      return model.forward_loss(v, t, pv, pt)[0]
    img_enc, txt_enc, third = self.parts
    if self.vsrn:
      img, regions = img_enc(self.images)
      txt = txt_enc(self.tokens, self.lengths)
      logprobs = third(regions, self.tokens)
      nll = vsrn_reference.language_model_nll(logprobs, self.tokens[:, 1:], self.mask[:, 1:])
      return torch_triplet(img @ txt.T) + nll.mean()
    img = img_enc(self.images)
    cap = txt_enc(self.tokens, self.lengths)
    return torch_triplet(third(img, cap, self.lengths))  # sim [n_image, n_caption]

  def run(self) -> torch.Tensor:
    self.opt.zero_grad(set_to_none=True)
    loss = self.loss()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(self.parts.parameters(), CLIP)
    self.opt.step()
    return loss

  def sync(self, out) -> float:
    return float(out.detach())


def build_runners(args, batch: dict[str, np.ndarray], kinds: list[str]) -> list:
  """PyTorch first (its memory is read before JAX allocates anything), then jitr."""
  runners = []
  if "torch" in kinds:
    t0 = time.perf_counter()
    runners.append(TorchRunner(args, batch))
    print(f"  built torch + 2 steps in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
  if "jitr" in kinds:
    variants = [v for v in getattr(args, "variants", "").split(",") if v] or [""]
    for i, variant in enumerate(variants):
      runners.insert(i, JitrRunner(args, batch, variant))
      print(f"  compiled jitr {variant} in {runners[i].compile_s:.1f}s", file=sys.stderr)
  return runners


# ----------------------------------------------------------------------------- evaluation


def _torch_shard_scores(parts, images, tokens, lengths, shard: int) -> np.ndarray:
  """The official ``shard_attn_scores``: eval mode, no_grad, ``shard x shard`` blocks."""
  parts.eval()
  img_enc, txt_enc, sim_enc = parts
  device = next(parts.parameters()).device
  with torch.no_grad():
    img = img_enc(torch.from_numpy(images).to(device))
    cap = txt_enc(torch.from_numpy(tokens).long().to(device), [int(n) for n in lengths])
    sims = np.zeros((len(images), len(tokens)), np.float32)
    for i in range(0, len(images), shard):
      for c in range(0, len(tokens), shard):
        lens = [int(n) for n in lengths[c : c + shard]]
        sims[i : i + shard, c : c + shard] = (
          sim_enc(img[i : i + shard], cap[c : c + shard], lens).cpu().numpy()
        )
  parts.train()
  return sims


def bench_eval(args, runners, make_split_batch) -> None:
  """pairs/s of jitr's ``score_split`` and of the official-style torch scoring."""
  n_img, n_cap = args.eval_images, args.eval_captions
  data = make_split_batch(n_img, n_cap)
  split = pairs.RetrievalSplit(
    images=data["images"],
    tokens=data["tokens"],
    lengths=data["lengths"],
    caption_image=np.arange(n_cap, dtype=np.int32) % n_img,
  )
  print(f"\n### Evaluation scoring, {n_img} images × {n_cap} captions ({n_img * n_cap} pairs)\n")
  print("| implementation | seconds | pairs/s | PyTorch time / this |")
  print("|---|---:|---:|---:|")
  rows = []
  for r in runners:
    if isinstance(r, JitrRunner):
      scorer = SplitScorer(r.model, image_batch=args.eval_block, caption_batch=args.eval_block)
      scorer(r.variables(), split)  # compiles
      t0 = time.perf_counter()
      scorer(r.variables(), split)
      variant = r.kind.partition("[")[2].rstrip("]")
      name = f"jitr `score_split` (`SplitScorer`, blocks of {args.eval_block}², 2nd call)"
      rows.append((name + (f", {variant}" if variant else ""), t0))
    else:
      t0 = time.perf_counter()
      _torch_shard_scores(r.parts, data["images"], data["tokens"], data["lengths"], 100)
      rows.append(("PyTorch `shard_attn_scores` style (shards of 100², per-caption loop)", t0))
    rows[-1] = (rows[-1][0], time.perf_counter() - rows[-1][1])
  ref = next((s for name, s in rows if name.startswith("PyTorch")), None)
  for name, s in rows:
    ratio = f"{ref / s:.2f}×" if ref else "–"
    print(f"| {name} | {s:.1f} | {n_img * n_cap / s:.0f} | {ratio} |")
  sys.stdout.flush()


# ----------------------------------------------------------------------------- profile


def _median_s(fn, n: int) -> float:
  ts = []
  for _ in range(n):
    t0 = time.perf_counter()
    fn()
    ts.append(time.perf_counter() - t0)
  return sorted(ts)[len(ts) // 2]


def _jitr_pieces(r: JitrRunner):
  """``(forward, forward + backward)`` of ``Σ sim + Σ aux`` (train mode), jitted."""
  m, key = r.model, jax.random.key(2)

  def total(params, variables, batch):
    variables = {**variables, "params": params}
    rngs = {"dropout": key}
    out, _ = m.forward(variables, batch, train=True, rngs=rngs, axis_name=None)
    if m.pairwise:
      sim, _ = m.score(variables, out.images, out.captions, train=True, rngs=rngs, axis_name=None)
    else:
      sim = out.images @ out.captions.T
    return sim.sum() + sum(a.sum() for a in out.aux_losses.values())

  fwd, grad = jax.jit(total), jax.jit(jax.grad(total))
  v = r.variables()
  run_f = lambda: jax.block_until_ready(fwd(v["params"], v, r.batch))
  run_g = lambda: jax.block_until_ready(grad(v["params"], v, r.batch))
  run_f(), run_g()  # compile
  return run_f, run_g


def _torch_pieces(r: TorchRunner):
  def run_f():
    with torch.no_grad():
      return float(r.loss())

  def run_g():
    r.parts.zero_grad(set_to_none=True)
    r.loss().backward()

  return run_f, run_g


def profile(runners, n: int = 2) -> None:
  """Forward-only vs forward + backward (no optimizer) of each implementation."""
  print(f"\n### Where the time goes (ms, median of {n}; train mode, no optimizer)\n")
  print("| implementation | forward | forward + backward | whole step (table above) |")
  print("|---|---:|---:|---:|")
  for r in runners:
    run_f, run_g = _jitr_pieces(r) if isinstance(r, JitrRunner) else _torch_pieces(r)
    f, g = _median_s(run_f, n), _median_s(run_g, n)
    print(f"| {LABELS[r.kind]} | {1e3 * f:.0f} | {1e3 * g:.0f} | |")
  sys.stdout.flush()
