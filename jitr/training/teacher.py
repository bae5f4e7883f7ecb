"""A teacher for image-aware relevance: a trained dual encoder's embeddings of a split.

``teacher:WORKDIR`` relevance (:mod:`jitr.training.graded`) is
``(1 + cos(e_i, t_j)) / 2`` of a ``jitr-train`` workdir's l2-normalised image and
caption embeddings. This module holds its pieces that need the models:

* :func:`check_teacher_config` -- the teacher is a dual encoder (``pairwise`` False:
  ``vse``, ``vsrn``) trained on the same data;
* :func:`check_teacher_vocab` -- with the same vocabulary (so the split's tokens mean
  the same words to it);
* :func:`saved_checkpoint` -- which checkpoint it is read from (best, else latest) and
  its step, found without opening it (the key of the stored embeddings);
* :func:`check_finished` -- its training finished (an interrupted run is refused);
* :func:`split_embeddings` -- the l2-normalised embeddings of every image and caption.

Reading the workdir's files, restoring the checkpoint and storing the embeddings is
the experiment's (:mod:`jitr.experiment.teachers`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from jitr import paths
from jitr.data import pairs
from jitr.data.vocab import Vocab, vocab_difference
from jitr.models import MODELS, make_model
from jitr.models.registry import network_name
from jitr.models.retrieval_model import INPUTS
from jitr.training.embed import caption_inputs, encode_in_batches, image_inputs


class TeacherError(ValueError):
  """A teacher workdir that cannot teach this run (one line naming it and why)."""


def can_teach(name: str, vocab_size: int = 8) -> bool:
  """Whether registered network ``name`` is a dual encoder (``RetrievalModel.pairwise``
  False) that reads only images and captions (its declared inputs are
  :data:`~jitr.models.retrieval_model.INPUTS`, it needs no dataset constants): a
  teacher's embeddings come from tokens and regions alone (a network of pixel towers,
  :attr:`!jitr.models.Network.tower_inputs`, reads no regions)."""
  network = MODELS[name]
  if set(network.inputs) - set(INPUTS) or network.constants or network.tower_inputs:
    return False
  return not make_model({"name": name}, vocab_size).pairwise


def dual_encoder_names() -> list[str]:
  """The registered networks that can teach (:func:`can_teach`: ``vse``, ``vsrn``)."""
  return [name for name in MODELS if can_teach(name)]


def check_teacher_config(
  workdir: str, trained_on: str, model: Mapping[str, Any], data: str, vocab_size: int
) -> None:
  """Raises :class:`TeacherError` unless the teacher (its ``config.json``'s data name
  ``trained_on``, e.g. ``jitr_shapes/tiny``, and ``model`` group) trains a dual encoder on
  this run's ``data`` (:meth:`jitr.data.datasets.DatasetInfo.data_name`)."""
  if trained_on != data:
    raise TeacherError(
      f"teacher:{workdir} was trained on {trained_on}, this run trains on "
      f"{data}; a teacher must be trained on the same data"
    )
  name = network_name(dict(model))
  if name not in MODELS:
    raise TeacherError(
      f"teacher:{workdir}: config.model.name is {name!r}, expected one of {sorted(MODELS)}"
    )
  if not can_teach(name, vocab_size):
    raise TeacherError(
      f"teacher needs a dual encoder ({', '.join(dual_encoder_names())}), {workdir} trains {name}"
    )


def check_teacher_vocab(workdir: str, teacher: Vocab, vocab: Vocab) -> None:
  """Raises :class:`TeacherError` when the teacher's vocabulary is not this run's."""
  difference = vocab_difference(teacher, vocab)
  if difference is not None:
    raise TeacherError(
      f"teacher:{workdir} was trained with another vocabulary {difference}: "
      "trained on other captions"
    )


def _steps(folder: str) -> list[int]:
  if not paths.isdir(folder):
    return []
  return sorted(int(n) for n in paths.listdir(folder) if n.isdigit())


def newest_checkpoint(workdir: str) -> tuple[str, int] | None:
  """``("best", step)`` of a jitr-train workdir's best checkpoint, else ``("latest", step)``
  of its latest, ``None`` when it has neither (what a teacher or a fine-tuning run reads)."""
  root = os.path.join(paths.absolute(workdir), "checkpoints")
  for which in ("best", "latest"):
    steps = _steps(os.path.join(root, which))
    if steps:
      return which, steps[-1]
  return None


def saved_checkpoint(workdir: str) -> tuple[str, int]:
  """``("best", step)`` of the workdir's best checkpoint, else ``("latest", step)``.

  Raises:
    TeacherError: the workdir has no checkpoint.
  """
  found = newest_checkpoint(workdir)
  if found is not None:
    return found
  root = os.path.join(paths.absolute(workdir), "checkpoints")
  raise TeacherError(
    f"teacher:{workdir}: no checkpoint in {root} (expected best/ or latest/ of jitr-train)"
  )


def check_finished(workdir: str) -> None:
  """Raises :class:`TeacherError` unless the teacher's training finished: ``jitr-train``
  writes ``metrics.json`` last, after the test split of the best checkpoint; a run stopped
  before that (interrupted, preempted, failed) has checkpoints but no ``metrics.json``."""
  if not paths.isfile(os.path.join(paths.absolute(workdir), "metrics.json")):
    raise TeacherError(
      f"teacher:{workdir}: its training did not finish (no metrics.json, which jitr-train "
      "writes last); run jitr-train on that workdir again to finish it"
    )


def _unit_rows(x: np.ndarray) -> np.ndarray:
  x = np.asarray(x, np.float32)
  return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def split_embeddings(
  model: Any, variables: Any, split: pairs.RetrievalSplit, *, batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
  """``(images [N_img, D], captions [N_cap, D])``: every item of ``split`` encoded by a dual
  encoder (``model.pairwise`` False) in eval mode, rows l2-normalised, float32 numpy."""
  if model.pairwise:
    raise TeacherError("split_embeddings: a similarity model (pairwise) has no embeddings")
  images = encode_in_batches(
    jax.jit(model.encode_images), variables, image_inputs(split), batch_size=batch_size
  )
  captions = encode_in_batches(
    jax.jit(model.encode_captions),
    variables,
    caption_inputs(split, model.inputs),
    batch_size=batch_size,
  )
  return _unit_rows(jax.device_get(images)), _unit_rows(jax.device_get(captions))
