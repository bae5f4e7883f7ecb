"""``teacher:WORKDIR`` relevance: a trained dual encoder's embeddings, stored once.

For every teacher a run's ``config.graded`` names (also inside a combination such as
``hmean:vectors:sentence|teacher:workdirs/vse``), :func:`stored_teachers`

1. checks the teacher workdir (it exists, its ``config.json`` is a valid training config
   of a dual encoder on this run's dataset, its ``vocab.json`` is this run's vocabulary,
   it has a checkpoint and its training finished: ``metrics.json`` is written)
   -- each failure one :class:`~jitr.training.teacher.TeacherError` line;
2. reuses the embeddings stored under
   ``<data_dir>/relevance/<dataset slug>/teacher-<sha>`` (:func:`teacher_dir`: keyed by
   the teacher's absolute path, checkpoint (best, else latest) and step, and the
   training captions' fingerprint, so a newer checkpoint or other captions are
   recomputed) when they are intact (:mod:`jitr.relevance.embedding_store`);
3. otherwise restores the checkpoint, encodes the training split
   (:func:`jitr.training.teacher.split_embeddings`) and stores ``images [N_img, D]`` and
   ``captions [N_cap, D]``.

The result, ``{workdir as written: (images, captions)}``, becomes the training split's
``teacher`` (the batches' ``teacher/<workdir>/images`` / ``captions`` rows).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from absl import logging

from jitr import paths
from jitr.data.datasets import DATASETS, SHAPES
from jitr.data.shapes import split as shapes_split
from jitr.data.vocab import caption_limit
from jitr.data.wordpiece_vocab import load_workdir_vocab
from jitr.experiment.data_sources.naming import run_data_name
from jitr.experiment.pinned_inputs import check_source_vocab
from jitr.experiment.stored_relevance import dataset_slug, settings_digest
from jitr.experiment.workdir import CONFIG_NAME, read_trained_config
from jitr.experiment.workdir_variables import DamagedSourceError, restore_variables
from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.embedding_store import (
  EmbeddingsCorruptError,
  read_embeddings,
  write_embeddings,
)
from jitr.training.graded import parse_source
from jitr.training.teacher import (
  TeacherError,
  check_finished,
  check_teacher_config,
  check_teacher_vocab,
  saved_checkpoint,
  split_embeddings,
)


def teacher_workdirs(graded: dict) -> list[str]:
  """The teacher workdirs (as written) of ``config.graded``'s sources, first seen first."""
  out: list[str] = []
  for source in graded.values():
    for leaf in parse_source(source).leaves():
      if leaf.stored == "teacher" and leaf.estimator not in out:
        out.append(leaf.estimator)
  return out


def teacher_identity(
  workdir: str, which: str, step: int, model: dict, captions: CaptionSet
) -> dict[str, Any]:
  """What the stored embeddings were computed from (the store's identity)."""
  return {
    "teacher": paths.absolute(workdir),
    "checkpoint": which,
    "step": int(step),
    "model": model,
    "dataset": {
      "source": captions.source,
      "fingerprint": captions.fingerprint(),
      "num_images": captions.num_images,
      "num_captions": captions.num_captions,
    },
  }


def teacher_dir(data_dir: str, identity: dict[str, Any]) -> str:
  """``<data_dir>/relevance/<dataset slug>/teacher-<sha>``, ``sha`` the first 10 hex digits
  of the sha256 of ``identity`` (teacher path, checkpoint and step, captions' fingerprint)."""
  slug = dataset_slug(identity["dataset"]["source"])
  return os.path.join(data_dir, "relevance", slug, f"teacher-{settings_digest(identity)}")


def _teacher_config(workdir: str) -> dict[str, Any]:
  path = paths.absolute(workdir)
  if not paths.isdir(path):
    raise TeacherError(f"teacher:{workdir}: no such workdir ({path})")
  try:
    saved = read_trained_config(path)
  except ValueError as err:
    raise TeacherError(f"teacher:{workdir}: {err}") from None
  if saved is None:
    raise TeacherError(
      f"teacher:{workdir}: no {CONFIG_NAME} in {path}; expected a jitr-train workdir"
    )
  return saved.to_dict()


def _teacher_vocab(workdir: str):
  path = os.path.join(paths.absolute(workdir), "vocab.json")
  try:
    check_source_vocab(workdir)
    return load_workdir_vocab(path)
  except (OSError, ValueError) as err:
    raise TeacherError(f"teacher:{workdir}: {err}") from None


def _restore(workdir: str, teacher: dict, vocab, train_split, which: str):
  """``(model, variables, step)`` of the teacher's ``which`` checkpoint."""
  try:
    return restore_variables(workdir, teacher, len(vocab), train_split, which)
  except DamagedSourceError as err:  # the teacher is another run: never advise deleting it
    raise TeacherError(
      f"teacher:{workdir}: its checkpoint is damaged: {err}; give a teacher workdir with "
      "an intact checkpoint (this run only reads it: it is the other run's, left as it is)"
    ) from None
  except ValueError as err:
    raise TeacherError(f"teacher:{workdir}: {err}") from None


def teacher_embeddings(
  workdir: str, config, train_split, vocab, captions: CaptionSet, data_dir: str
) -> tuple[Any, Any]:
  """``(images [N_img, D], captions [N_cap, D])`` of one teacher (see the module docstring).
  Raises:
    TeacherError: a workdir that cannot teach this run (one line naming it and why).
  """
  teacher = _teacher_config(workdir)
  check_teacher_config(
    workdir, run_data_name(teacher), teacher["model"], run_data_name(config), len(vocab)
  )
  check_teacher_vocab(workdir, _teacher_vocab(workdir), vocab)
  which, step = saved_checkpoint(workdir)
  check_finished(workdir)
  identity = teacher_identity(workdir, which, step, teacher["model"], captions)
  out = teacher_dir(data_dir, identity)
  try:
    stored = read_embeddings(out, identity)
  except EmbeddingsCorruptError as err:
    logging.warning("teacher embeddings are damaged, recomputing them: %s", err)
    stored = None
  if stored is not None:
    logging.info("teacher %s: embeddings of step %d reused from %s", workdir, step, out)
    return stored["images"], stored["captions"]
  model, variables, restored = _restore(workdir, teacher, vocab, train_split, which)
  if restored != step:  # a damaged newest checkpoint: an older one was restored
    identity = teacher_identity(workdir, which, restored, teacher["model"], captions)
    out = teacher_dir(data_dir, identity)
  images, caption_vectors = split_embeddings(
    model, variables, train_split, batch_size=config.eval_batch_size
  )
  write_embeddings(out, {"images": images, "captions": caption_vectors}, identity)
  logging.info("teacher %s: embeddings of %s step %d stored in %s", workdir, which, restored, out)
  return images, caption_vectors


def stored_teachers(config, train_split, vocab, captions: CaptionSet, data_dir: str) -> dict:
  """``{workdir as written: (images, captions)}`` of every teacher ``config.graded`` names."""
  return {
    workdir: teacher_embeddings(workdir, config, train_split, vocab, captions, data_dir)
    for workdir in teacher_workdirs(dict(config.graded))
  }


def shapes_split_embeddings(
  workdir: str, arrays: dict, shapes_config: str, *, batch_size: int = 500
) -> tuple[Any, Any]:
  """``(images [N_img, D], captions [N_cap, D])``: the teacher's l2-normalised embeddings
  of any jitr_shapes split (``arrays`` of ``shapes_tfds.load_split(..., images=True)``),
  its captions tokenised with the teacher's own vocabulary; not stored (for measuring
  the teacher's relevance on val / test, which training never encodes).
  Raises:
    TeacherError: the workdir is not a dual encoder trained on ``jitr_shapes/shapes_config``
      or has no checkpoint (one line naming it and why).
  """
  teacher = _teacher_config(workdir)
  vocab = _teacher_vocab(workdir)
  shapes = DATASETS[SHAPES].data_name(shapes_config=shapes_config)
  check_teacher_config(workdir, run_data_name(teacher), teacher["model"], shapes, len(vocab))
  max_len = caption_limit(vocab, int(teacher["max_caption_len"]))
  split = shapes_split.retrieval_split(arrays, vocab, max_len=max_len)
  which, _ = saved_checkpoint(workdir)
  check_finished(workdir)
  model, variables, _ = _restore(workdir, teacher, vocab, split, which)
  return split_embeddings(model, variables, split, batch_size=batch_size)


def with_teachers(config, splits: dict, vocab, captions: CaptionSet, data_dir: str) -> dict:
  """``splits`` with the train split's ``teacher`` embeddings of every ``teacher:WORKDIR``
  source of ``config.graded`` (none: unchanged)."""
  if not teacher_workdirs(dict(config.graded)):
    return splits
  teachers = stored_teachers(config, splits["train"], vocab, captions, data_dir)
  return {**splits, "train": dataclasses.replace(splits["train"], teacher=teachers)}
