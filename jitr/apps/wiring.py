"""Shared wiring of the apps: data + stored relevance, the model and its state, evaluation."""

from __future__ import annotations

import os
from typing import Any

from absl import logging


def data_dir(config, workdir: str) -> str:
  """``config.data_dir`` or ``<workdir>/../tfds`` (shared between runs)."""
  return config.data_dir or os.path.join(os.path.dirname(os.path.abspath(workdir)), "tfds")


def stored_relevance(
  caption_list, per_image: int, source: str, config, data_dir: str
) -> tuple[dict, dict, dict]:
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
  captions = CaptionSet(
    source=source,
    image_ids=tuple(str(i) for i in range(n_img)),
    caption_ids=tuple(f"{i}#{k}" for i in range(n_img) for k in range(per)),
    captions=tuple(caption_list),
    image_offsets=np.arange(n_img + 1) * per,
  )
  vectors, topk, scales = {}, {}, {}
  for source in dict(config.graded).values():
    kind, name = parse_source(source)
    if kind == "oracle" or name in vectors or name in topk:
      continue
    kwargs = dict(config.estimators.get(name, {}))
    out = os.path.join(data_dir, "relevance", f"{source.replace('/', '-')}-{name}-{kind}")
    if kind == "topk":
      records.write_relevance_records(
        out,
        captions,
        estimator_lib.make_estimator(name, **kwargs),
        vectors=False,
        top_k=config.top_k,
        log=logging.info,
      )
    else:
      records.write_relevance_records(
        out, captions, estimator_lib.make_estimator(name, **kwargs), vectors=True, log=logging.info
      )
    table = relevance_reader.load_relevance_table(out, expected_fingerprint=captions.fingerprint())
    if kind == "topk":
      topk[name] = (table.topk_indices, table.topk_scores)
      scales[name] = table.relevance_scale
    else:
      vectors[name] = table.caption_vectors
  return vectors, topk, scales


def load_shapes(config, data_dir: str):
  """``(splits, vocab, exact relevance of val/test, eval folds)`` of jitr_shapes."""
  from jitr.data import shapes_split, shapes_tfds
  from jitr.data import vocab as vocab_lib

  shapes_tfds.build(data_dir, config.shapes_config)
  arrays = {
    s: shapes_tfds.load_split(s, data_dir=data_dir, config=config.shapes_config, images=False)
    for s in ("train", "val", "test")
  }
  vocab = vocab_lib.build_vocab(arrays["train"]["captions"])
  vectors, topk, scales = stored_relevance(
    arrays["train"]["captions"], 5, f"jitr_shapes/{config.shapes_config}/train", config, data_dir
  )
  splits = {
    s: shapes_split.retrieval_split(
      a,
      vocab,
      max_len=config.max_caption_len,
      vectors=vectors if s == "train" else None,
      topk=topk if s == "train" else None,
    )
    for s, a in arrays.items()
  }
  exact = {
    s: shapes_tfds.split_relevance(s, data_dir=data_dir, config=config.shapes_config)
    for s in ("val", "test")
  }
  return splits, vocab, exact, scales, None


def load_precomp(config, data_dir: str):
  """The same for a ``*_precomp`` folder: train / dev (validation) / ``config.test_split``."""
  from jitr.data import pairs, precomp

  folder = precomp.precomp_dir(config.precomp_root, config.dataset.removesuffix("_precomp"))
  raw = {
    name: precomp.load_precomp_split(folder, split)
    for name, split in (("train", "train"), ("val", "dev"), ("test", config.test_split))
  }
  vocab = precomp.build_precomp_vocab(folder, min_count=config.vocab_min_count)
  vectors, topk, scales = stored_relevance(
    raw["train"].captions,
    raw["train"].captions_per_image,
    f"{config.dataset}/train",
    config,
    data_dir,
  )
  splits = {}
  for name, split in raw.items():
    tokens, lengths = vocab.encode_batch(split.captions, max_len=config.max_caption_len)
    splits[name] = pairs.RetrievalSplit(
      images=split.images,
      tokens=tokens,
      lengths=lengths,
      caption_image=split.caption_image_index(),
      vectors=vectors if name == "train" else {},
      topk=topk if name == "train" else {},
    )
  folds = config.eval_folds or None
  return splits, vocab, None, scales, folds


def load_data(config, data_dir_: str):
  """``(splits, vocab, exact relevance or None, top-K scales, eval folds)`` of ``config.dataset``."""
  return (load_shapes if config.dataset == "jitr_shapes" else load_precomp)(config, data_dir_)


def initial_state(config, vocab_size: int, train_split, steps_per_epoch: int):
  """``(model, TrainState)``: the dual encoder of ``config.model`` initialised from ``config.seed``."""
  import jax
  import numpy as np

  from jitr import training
  from jitr.data import pairs
  from jitr.models import create_dual_encoder

  model = create_dual_encoder(vocab_size=vocab_size, **config.model.to_dict())
  first = pairs.make_batch(train_split, np.arange(2))
  params = jax.jit(model.init)(
    jax.random.key(config.seed),
    first["images"],
    first["tokens"],
    first["lengths"],
    first.get("image_mask"),
  )["params"]

  def apply_fn(p, batch, rngs):
    return model.apply(
      {"params": p},
      batch["images"],
      batch["tokens"],
      batch["lengths"],
      batch.get("image_mask"),
      rngs=rngs,
    )

  tx = training.make_optimizer(config.optimizer.to_dict(), steps_per_epoch=steps_per_epoch)
  return model, training.create_train_state(params, apply_fn, tx, jax.random.key(config.seed + 1))


class Evaluator:
  """``evaluator(split, params) -> metrics``: embeds a split with both towers and
  runs :func:`jitr.evaluation.evaluate_retrieval` (exact relevance and its
  relevance-1 items as extended positives on jitr_shapes; COCO folds on test)."""

  def __init__(
    self, model, splits: dict, exact: dict | None, folds: int | None, *, batch_size: int
  ):
    import jax

    self.splits, self.exact, self.folds, self.batch_size = splits, exact, folds, batch_size
    self._graded: dict[str, dict] = {}  # per split, built once (validation runs every epoch)
    self.encode_image = jax.jit(
      lambda p, x, m: model.apply({"params": p}, x, m, method="encode_image")
    )
    self.encode_text = jax.jit(
      lambda p, t, n: model.apply({"params": p}, t, n, method="encode_text")
    )

  def similarity(self, split: str, params: Any):
    from jitr.training.embed import embed_split

    img, txt = embed_split(
      self.encode_image, self.encode_text, params, self.splits[split], batch_size=self.batch_size
    )
    return img @ txt.T

  def _graded_inputs(self, split: str) -> dict:
    """Exact relevance and its relevance-1 items as extended positives (jitr_shapes only)."""
    import numpy as np

    from jitr.evaluation.positives import positives_from_lists

    if self.exact is None:
      return {}
    if split not in self._graded:
      rel = self.exact[split]
      ones = rel >= 1.0
      self._graded[split] = {
        "relevance": rel,
        "extended_positives": {
          "exact": (
            positives_from_lists([np.flatnonzero(r) for r in ones], num_gallery=rel.shape[1]),
            positives_from_lists([np.flatnonzero(c) for c in ones.T], num_gallery=rel.shape[0]),
          )
        },
      }
    return self._graded[split]

  def __call__(self, split: str, params: Any, sim=None) -> dict:
    from jitr.evaluation.suite import evaluate_retrieval

    sim = self.similarity(split, params) if sim is None else sim
    metrics = evaluate_retrieval(
      sim,
      caption_to_image=self.splits[split].caption_image,
      folds=self.folds if split == "test" else None,
      curve_ks=(1, 5, 10, 20, 50, 100),
      ndcg_ks=(1, 5, 10, 20, 50, 100),
      semantic_ks=(),
      **self._graded_inputs(split),
    )
    metrics["rsum"] = metrics["full/rsum"]
    return metrics
