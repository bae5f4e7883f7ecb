"""Shared wiring of the apps: data + stored relevance, the model and its state, evaluation."""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import TYPE_CHECKING, Any

from absl import logging

if TYPE_CHECKING:
  from jitr.relevance.estimator import RelevanceEstimator


def data_dir(config, workdir: str) -> str:
  """``config.data_dir`` or ``<workdir>/../tfds`` (shared between runs)."""
  return config.data_dir or os.path.join(os.path.dirname(os.path.abspath(workdir)), "tfds")


def relevance_records_dir(
  data_dir: str, dataset: str, estimator: RelevanceEstimator, *, top_k: int | None
) -> str:
  """``<data_dir>/relevance/<dataset slug>/<estimator>-<vectors|topK>-<sha>``: one folder per
  dataset and estimator settings (``sha``: the first 10 hex digits of the sha256 of the
  estimator's name, ``params()`` and what is stored). Names hold only ``[A-Za-z0-9._-]``."""
  contents = "vectors" if top_k is None else f"top{int(top_k)}"
  settings = {"estimator": estimator.name, "params": estimator.params(), "contents": contents}
  digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8")).hexdigest()[:10]
  slug = re.sub(r"[^A-Za-z0-9._-]+", "-", dataset).strip("-.") or "dataset"
  return os.path.join(data_dir, "relevance", slug, f"{estimator.name}-{contents}-{digest}")


def caption_set(caption_list, per_image: int, dataset: str):
  """A :class:`CaptionSet` of ``per_image`` consecutive captions per image (ids ``i``, ``i#k``)."""
  import numpy as np

  from jitr.relevance.captions_io import CaptionSet

  n_img = len(caption_list) // per_image
  return CaptionSet(
    source=dataset,
    image_ids=tuple(str(i) for i in range(n_img)),
    caption_ids=tuple(f"{i}#{k}" for i in range(n_img) for k in range(per_image)),
    captions=tuple(caption_list),
    image_offsets=np.arange(n_img + 1) * per_image,
  )


def stored_relevance(
  caption_list, per_image: int, dataset: str, config, data_dir: str
) -> tuple[dict, dict, dict]:
  """``(vectors, topk, aggregates)`` of every estimator ``config.graded`` names, read from
  relevance TFRecords under :func:`relevance_records_dir` (computed on first use).

  ``vectors[NAME]`` ``[N_cap, D]``, ``topk[NAME]`` ``(indices, scores)`` ``[N_img, K]``,
  ``aggregates[NAME]`` the vectors' aggregate from the records header (for ``make_graded_fn``).
  """
  from jitr.data.relevance_reader import load_relevance_table
  from jitr.relevance.records import write_relevance_records
  from jitr.relevance.registry import make_estimator
  from jitr.training.graded import check_vectors_kind, parse_source

  captions = caption_set(caption_list, per_image, dataset)
  vectors, topk, aggregates = {}, {}, {}
  leaves = [
    leaf for graded in dict(config.graded).values() for leaf in parse_source(graded).leaves()
  ]
  for source in leaves:
    stored = {"vectors": vectors, "topk": topk}.get(source.stored)
    if stored is None or source.estimator in stored:
      continue
    estimator = make_estimator(
      source.estimator, **dict(config.estimators.get(source.estimator, {}))
    )
    check_vectors_kind(source, estimator.relevance_kind)
    top_k = config.top_k if source.stored == "topk" else None
    out = relevance_records_dir(data_dir, dataset, estimator, top_k=top_k)
    write_relevance_records(
      out, captions, estimator, vectors=top_k is None, top_k=top_k, log=logging.info
    )
    table = load_relevance_table(out, expected_fingerprint=captions.fingerprint())
    if top_k is None:
      vectors[source.estimator] = table.caption_vectors
      aggregates[source.estimator] = table.aggregate
    else:
      topk[source.estimator] = (table.topk_indices, table.topk_scores)
  return vectors, topk, aggregates


def with_teachers(
  config, splits: dict, vocab, caption_list, per_image: int, dataset: str, data_dir
):
  """``splits`` with the train split's ``teacher`` embeddings of every ``teacher:WORKDIR``
  source of ``config.graded`` (:mod:`jitr.apps.teacher_relevance`; none: unchanged)."""
  import dataclasses

  from jitr.apps.teacher_relevance import stored_teachers, teacher_workdirs

  if not teacher_workdirs(dict(config.graded)):
    return splits
  captions = caption_set(caption_list, per_image, dataset)
  teachers = stored_teachers(config, splits["train"], vocab, captions, data_dir)
  return {**splits, "train": dataclasses.replace(splits["train"], teacher=teachers)}


def load_shapes(config, data_dir: str, *, teachers: bool = True):
  """``(splits, vocab, exact relevance of val/test, eval folds)`` of jitr_shapes."""
  from jitr.data import shapes_split, shapes_tfds
  from jitr.data import vocab as vocab_lib

  shapes_tfds.build(data_dir, config.shapes_config)
  arrays = {
    s: shapes_tfds.load_split(s, data_dir=data_dir, config=config.shapes_config, images=False)
    for s in ("train", "val", "test")
  }
  vocab = vocab_lib.build_vocab(arrays["train"]["captions"])
  vectors, topk, aggregates = stored_relevance(
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
  if teachers:
    dataset = f"jitr_shapes/{config.shapes_config}/train"
    splits = with_teachers(config, splits, vocab, arrays["train"]["captions"], 5, dataset, data_dir)
  exact = {
    s: shapes_tfds.split_relevance(s, data_dir=data_dir, config=config.shapes_config)
    for s in ("val", "test")
  }
  return splits, vocab, exact, aggregates, None


def load_precomp(config, data_dir: str, *, teachers: bool = True):
  """The same for a ``*_precomp`` folder: train / dev (validation) / ``config.test_split``."""
  from jitr.data import pairs, precomp

  folder = precomp.precomp_dir(config.precomp_root, config.dataset.removesuffix("_precomp"))
  raw = {
    name: precomp.load_precomp_split(folder, split)
    for name, split in (("train", "train"), ("val", "dev"), ("test", config.test_split))
  }
  vocab = precomp.build_precomp_vocab(folder, min_count=config.vocab_min_count)
  vectors, topk, aggregates = stored_relevance(
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
  if teachers:
    splits = with_teachers(
      config,
      splits,
      vocab,
      raw["train"].captions,
      raw["train"].captions_per_image,
      f"{config.dataset}/train",
      data_dir,
    )
  folds = config.eval_folds or None
  return splits, vocab, None, aggregates, folds


def load_data(config, data_dir_: str, *, teachers: bool = True):
  """``(splits, vocab, exact relevance or None, vectors' aggregates, eval folds)`` of
  ``config.dataset`` (the aggregates go to ``make_graded_fn``). ``teachers=False`` leaves
  out the ``teacher:`` embeddings (only training reads them; evaluation needs no teacher)."""
  load = load_shapes if config.dataset == "jitr_shapes" else load_precomp
  return load(config, data_dir_, teachers=teachers)


def initial_state(config, vocab_size: int, train_split, steps_per_epoch: int):
  """``(model, TrainState)``: the :class:`jitr.models.RetrievalModel` ``config.model`` names
  (``jitr.models.MODELS``; ``name`` defaults to ``"vse"``), initialised from ``config.seed``;
  its non-param collections (BatchNorm statistics) go to ``state.model_state``."""
  import jax
  import numpy as np

  from jitr import training
  from jitr.data import pairs
  from jitr.models import make_model
  from jitr.training.step import MODEL_INPUTS

  model = make_model(config.model.to_dict(), vocab_size)
  first = pairs.make_batch(train_split, np.arange(2))
  inputs = {k: first[k] for k in MODEL_INPUTS if k in first}
  variables = jax.jit(model.init)(jax.random.key(config.seed), inputs)
  tx = training.make_optimizer(config.optimizer.to_dict(), steps_per_epoch=steps_per_epoch)
  return model, training.create_train_state(variables, tx, jax.random.key(config.seed + 1))


class Evaluator:
  """``evaluator(split, variables) -> metrics``: the split's similarity matrix under a
  ``RetrievalModel`` (:class:`jitr.training.score_split.SplitScorer`: each item encoded
  once, pairs scored in ``batch_size`` x ``batch_size`` blocks; embedding models by a dot product,
  similarity models by their ``score``) and :func:`jitr.evaluation.evaluate_retrieval`
  (exact relevance and its relevance-1 items as extended positives on jitr_shapes; COCO
  folds on test). ``variables``: a state's ``state.variables``."""

  def __init__(
    self,
    model,
    splits: dict,
    exact: dict | None,
    folds: int | None,
    *,
    batch_size: int,
  ):
    from jitr.training.score_split import SplitScorer

    self.splits, self.exact, self.folds, self.batch_size = splits, exact, folds, batch_size
    self._graded: dict[str, dict] = {}  # per split, built once (validation runs every epoch)
    self.scorer = SplitScorer(model, image_batch=batch_size, caption_batch=batch_size)

  def similarity(self, split: str, variables: Any):
    """``sim [N_img, N_cap]`` (float32 numpy) of ``split`` under ``variables``."""
    return self.scorer(variables, self.splits[split])

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

  def __call__(self, split: str, variables: Any, sim=None) -> dict:
    from jitr.evaluation.suite import evaluate_retrieval

    sim = self.similarity(split, variables) if sim is None else sim
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
