"""``jitr-train``: train a dual encoder with any jitr loss on jitr_shapes.

  jitr-train --config=configs/default.py --workdir=/tmp/jitr/default \
      [--config.num_epochs=5] [--config.graded.relevance=oracle]

Wires data (jitr.data), relevance (jitr.relevance TFRecords), models, losses,
training and evaluation; holds no logic of its own beyond that wiring.
"""

from __future__ import annotations

import json
import os
import time

from absl import app, flags, logging
from ml_collections import config_flags

_CONFIG = config_flags.DEFINE_config_file("config", None, "Experiment config file (configs/*.py).")
_WORKDIR = flags.DEFINE_string("workdir", None, "Directory for checkpoints, logs and results.")
flags.mark_flags_as_required(["config", "workdir"])

RESULT_KEYS = [("full/i2t/R@1", "i2t R@1"), ("full/i2t/R@5", "i2t R@5"), ("full/i2t/R@10", "i2t R@10"),
               ("full/t2i/R@1", "t2i R@1"), ("full/t2i/R@5", "t2i R@5"), ("full/t2i/R@10", "t2i R@10"),
               ("full/rsum", "RSUM"), ("ndcg/i2t/NDCG@10", "i2t NDCG@10"), ("ndcg/t2i/NDCG@10", "t2i NDCG@10"),
               ("exact/i2t/mAP@R", "i2t mAP@R"), ("exact/t2i/mAP@R", "t2i mAP@R")]


def _check_config(config) -> None:
  if config.dataset not in ("jitr_shapes", "f30k_precomp", "coco_precomp"):
    raise ValueError(f"config.dataset: expected 'jitr_shapes', 'f30k_precomp' or 'coco_precomp', "
                     f"got {config.dataset!r}")
  if config.dataset != "jitr_shapes" and not config.precomp_root:
    raise ValueError(f"config.precomp_root: the folder holding {config.dataset}/ is required for {config.dataset}")
  if "oracle" in dict(config.graded).values() and config.dataset != "jitr_shapes":
    raise ValueError("config.graded: 'oracle' relevance exists only for jitr_shapes")
  from jitr.training.graded import parse_source
  for name, source in dict(config.graded).items():
    try:
      parse_source(source)
    except ValueError as err:
      raise ValueError(f"config.graded.{name}: {err}") from None
  if config.batch_size <= 0 or config.num_epochs <= 0:
    raise ValueError("config.batch_size and config.num_epochs must be positive")


def _stored_relevance(caption_list, per_image: int, source: str, config, data_dir: str) -> tuple[dict, dict, dict]:
  """``(vectors, topk, scales)`` of every estimator ``config.graded`` names, from
  relevance TFRecords under ``data_dir/relevance`` (precomputed on first use)."""
  import numpy as np

  from jitr.data import relevance_reader
  from jitr.relevance import estimator as estimator_lib
  from jitr.relevance import records
  from jitr.relevance.captions_io import CaptionSet
  from jitr.training.graded import parse_source

  per = per_image
  n_img = len(caption_list) // per
  captions = CaptionSet(source=source, image_ids=tuple(str(i) for i in range(n_img)),
                        caption_ids=tuple(f"{i}#{k}" for i in range(n_img) for k in range(per)),
                        captions=tuple(caption_list), image_offsets=np.arange(n_img + 1) * per)
  vectors, topk, scales = {}, {}, {}
  for source in dict(config.graded).values():
    kind, name = parse_source(source)
    if kind == "oracle" or name in vectors or name in topk:
      continue
    kwargs = dict(config.estimators.get(name, {}))
    out = os.path.join(data_dir, "relevance", f"{source.replace('/', '-')}-{name}-{kind}")
    if kind == "topk":
      records.write_relevance_records(out, captions, estimator_lib.make_estimator(name, **kwargs),
                                      vectors=False, top_k=config.top_k, log=logging.info)
    else:
      records.write_relevance_records(out, captions, estimator_lib.make_estimator(name, **kwargs),
                                      vectors=True, log=logging.info)
    table = relevance_reader.load_relevance_table(out, expected_fingerprint=captions.fingerprint())
    if kind == "topk":
      topk[name] = (table.topk_indices, table.topk_scores)
      scales[name] = table.relevance_scale
    else:
      vectors[name] = table.caption_vectors
  return vectors, topk, scales


def _load_shapes(config, data_dir: str):
  """``(splits, vocab, exact relevance of val/test, eval folds)`` of jitr_shapes."""
  from jitr.data import shapes_split, shapes_tfds
  from jitr.data import vocab as vocab_lib

  shapes_tfds.build(data_dir, config.shapes_config)
  arrays = {s: shapes_tfds.load_split(s, data_dir=data_dir, config=config.shapes_config, images=False)
            for s in ("train", "val", "test")}
  vocab = vocab_lib.build_vocab(arrays["train"]["captions"])
  vectors, topk, scales = _stored_relevance(arrays["train"]["captions"], 5, f"jitr_shapes/{config.shapes_config}/train",
                                            config, data_dir)
  splits = {s: shapes_split.retrieval_split(a, vocab, max_len=config.max_caption_len,
                                            vectors=vectors if s == "train" else None,
                                            topk=topk if s == "train" else None)
            for s, a in arrays.items()}
  exact = {s: shapes_tfds.split_relevance(s, data_dir=data_dir, config=config.shapes_config) for s in ("val", "test")}
  return splits, vocab, exact, scales, None


def _load_precomp(config, data_dir: str):
  """The same for a ``*_precomp`` folder: train / dev (validation) / ``config.test_split``."""
  from jitr.data import pairs, precomp

  folder = precomp.precomp_dir(config.precomp_root, config.dataset.removesuffix("_precomp"))
  raw = {name: precomp.load_precomp_split(folder, split)
         for name, split in (("train", "train"), ("val", "dev"), ("test", config.test_split))}
  vocab = precomp.build_precomp_vocab(folder, min_count=config.vocab_min_count)
  vectors, topk, scales = _stored_relevance(raw["train"].captions, raw["train"].captions_per_image,
                                            f"{config.dataset}/train", config, data_dir)
  splits = {}
  for name, split in raw.items():
    tokens, lengths = vocab.encode_batch(split.captions, max_len=config.max_caption_len)
    splits[name] = pairs.RetrievalSplit(
        images=split.images, tokens=tokens, lengths=lengths, caption_image=split.caption_image_index(),
        vectors=vectors if name == "train" else {}, topk=topk if name == "train" else {})
  folds = config.eval_folds or None
  return splits, vocab, None, scales, folds


def _results_table(metrics: dict, title: str) -> str:
  head = "| " + " | ".join(name for _, name in RESULT_KEYS) + " |"
  rule = "|" + "---|" * len(RESULT_KEYS)
  row = "| " + " | ".join(f"{metrics.get(key, float('nan')):.2f}" for key, _ in RESULT_KEYS) + " |"
  return f"{title}\n\n{head}\n{rule}\n{row}\n"


def train_and_evaluate(config, workdir: str) -> dict:
  """Trains per ``config`` in ``workdir``; returns the test metrics of the best checkpoint."""
  import jax
  import numpy as np

  from jitr import losses, training
  from jitr.data import pairs
  from jitr.evaluation import report
  from jitr.evaluation.positives import positives_from_lists
  from jitr.evaluation.suite import evaluate_retrieval
  from jitr.models import create_dual_encoder
  from jitr.training import distributed
  from jitr.training.checkpoints import Checkpoints
  from jitr.training.embed import embed_split
  from jitr.training.graded import make_graded_fn
  from jitr.training.loop import StopRequested, fit

  _check_config(config)
  workdir = os.path.abspath(workdir)
  os.makedirs(workdir, exist_ok=True)
  data_dir = config.data_dir or os.path.join(os.path.dirname(workdir), "tfds")
  load = _load_shapes if config.dataset == "jitr_shapes" else _load_precomp
  splits, vocab, exact, scales, folds = load(config, data_dir)
  vocab.save(os.path.join(workdir, "vocab.json"))

  model = create_dual_encoder(vocab_size=len(vocab), **config.model.to_dict())
  steps_per_epoch = pairs.steps_per_epoch(splits["train"], config.batch_size)
  first = pairs.make_batch(splits["train"], np.arange(2))
  params = jax.jit(model.init)(jax.random.key(config.seed), first["images"], first["tokens"], first["lengths"],
                               first.get("image_mask"))["params"]

  def apply_fn(p, batch, rngs):
    return model.apply({"params": p}, batch["images"], batch["tokens"], batch["lengths"], batch.get("image_mask"),
                       rngs=rngs)

  tx = training.make_optimizer(config.optimizer.to_dict(), steps_per_epoch=steps_per_epoch)
  state = training.create_train_state(params, apply_fn, tx, jax.random.key(config.seed + 1))
  parallel = training.DataParallel(
      training.make_train_step(losses.objective(config.loss),
                               graded_fn=make_graded_fn(config.graded, scales=scales)), backend=config.backend)
  if config.batch_size % parallel.num_devices:
    raise ValueError(f"config.batch_size={config.batch_size} does not split over {parallel.num_devices} devices")

  encode_image = jax.jit(lambda p, x, m: model.apply({"params": p}, x, m, method="encode_image"))
  encode_text = jax.jit(lambda p, t, n: model.apply({"params": p}, t, n, method="encode_text"))

  def evaluate(split: str, params) -> dict:
    img, txt = embed_split(encode_image, encode_text, params, splits[split], batch_size=config.eval_batch_size)
    graded = {}
    if exact is not None:  # jitr_shapes: exact relevance, and its relevance-1 items as extended positives
      rel = exact[split]
      ones = rel >= 1.0
      graded = {"relevance": rel, "extended_positives": {"exact": (
          positives_from_lists([np.flatnonzero(r) for r in ones], num_gallery=rel.shape[1]),
          positives_from_lists([np.flatnonzero(c) for c in ones.T], num_gallery=rel.shape[0]))}}
    metrics = evaluate_retrieval(img @ txt.T, caption_to_image=splits[split].caption_image,
                                 folds=folds if split == "test" else None, curve_ks=(1, 5, 10),
                                 ndcg_ks=(1, 5, 10), semantic_ks=(), **graded)
    metrics["rsum"] = metrics["full/rsum"]
    return metrics

  summary = _summary_writer(workdir)
  started = time.time()

  def on_step(step, metrics):
    if step % config.log_every_steps == 0 or step == steps_per_epoch * config.num_epochs:
      values = {k: float(v) for k, v in jax.device_get(metrics).items()}
      rate = step / max(time.time() - started, 1e-9)
      eta = (steps_per_epoch * config.num_epochs - step) / max(rate, 1e-9)
      logging.info("step %d/%d  %s  (%.1f steps/s, ETA %.0f s)", step, steps_per_epoch * config.num_epochs,
                   "  ".join(f"{k}={v:.4f}" for k, v in sorted(values.items())), rate, eta)
      for k, v in values.items():
        summary.scalar(f"train/{k}", v, step)

  def on_epoch(epoch, metrics):
    logging.info("epoch %d: val RSUM %.2f  NDCG@10 i2t %.3f t2i %.3f", epoch + 1, metrics["rsum"],
                 metrics.get("ndcg/i2t/NDCG@10", float("nan")), metrics.get("ndcg/t2i/NDCG@10", float("nan")))
    for k, v in metrics.items():
      summary.scalar(f"val/{k}", v, (epoch + 1) * steps_per_epoch)
    summary.flush()

  rows = distributed.process_batch_slice(config.batch_size)  # this host's rows of each global batch
  checkpoints = Checkpoints(workdir)
  with StopRequested() as stop:
    state, finished = fit(
        state, parallel=parallel,
        epoch_batches=lambda e: pairs.epoch_batches(splits["train"], batch_size=config.batch_size,
                                                    seed=config.seed, epoch=e, rows=rows),
        steps_per_epoch=steps_per_epoch, num_epochs=config.num_epochs, checkpoints=checkpoints,
        evaluate=lambda s: evaluate("val", s.params), on_step=on_step, on_epoch=on_epoch, stop=stop)
  if not finished:
    logging.warning("stopped at step %d (SIGTERM); the latest checkpoint is saved, run again to resume",
                    int(state.step))
    checkpoints.close()
    return {}
  best = checkpoints.restore(state, which="best") or state
  checkpoints.close()
  test = evaluate("test", best.params)
  report.write_json_atomic(os.path.join(workdir, "metrics.json"), test)
  table = _results_table(test, f"Test split, best checkpoint (step {int(best.step)})"
                         + (", exact relevance:" if exact is not None else ":"))
  report.write_text_atomic(os.path.join(workdir, "results.md"), table)
  print(table)
  return test


class _summary_writer:
  """TensorBoard event files in ``workdir/tensorboard`` (``tf.summary``; TF kept off GPUs)."""

  def __init__(self, workdir: str):
    from jitr.data.tf_cpu import import_tf
    tf = import_tf()
    self._tf = tf
    self._writer = tf.summary.create_file_writer(os.path.join(workdir, "tensorboard"))

  def scalar(self, name, value, step):
    with self._writer.as_default():
      self._tf.summary.scalar(name, float(value), step=int(step))

  def flush(self):
    self._writer.flush()


class _QuietLibraries:
  """Drops INFO records of orbax and TFDS, which log every file they touch."""

  def filter(self, record) -> bool:
    path = record.pathname.replace(os.sep, "/")
    return record.levelno >= 30 or not ("/orbax/" in path or "/tensorflow_datasets/" in path)


def main(argv) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  logging.get_absl_handler().addFilter(_QuietLibraries())
  config = _CONFIG.value
  from jitr.training import distributed
  distributed.initialize(config.distributed.coordinator_address or None, config.distributed.num_processes,
                         config.distributed.process_id)
  train_and_evaluate(config, _WORKDIR.value)


def run() -> None:
  app.run(main)


if __name__ == "__main__":
  run()
