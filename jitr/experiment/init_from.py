"""``config.init_from``: a run that starts from another workdir's trained parameters.

Fine-tuning takes the parameters and the model state (BatchNorm statistics) of the
source workdir's best checkpoint (its latest when it has none), and keeps this run's fresh
optimizer state, step and random key: the optimizer and its schedule start afresh. The
source must hold the same network (every parameter of the same shape) trained on the same
vocabulary; hyper-parameters that change no shape (dropout, the loss, the optimizer) may
differ. A VSRN source without a caption decoder (an official checkpoint) gives a run with
the captioning loss a fresh decoder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import jax
from absl import logging

from jitr import paths
from jitr.data import pairs
from jitr.data.vocab import Vocab, vocab_difference
from jitr.data.wordpiece_vocab import load_workdir_vocab
from jitr.experiment.workdir import CONFIG_NAME, read_trained_config
from jitr.experiment.workdir_variables import DamagedSourceError, restore_variables
from jitr.models import MODELS, Network
from jitr.models.registry import network_name
from jitr.training import TrainState
from jitr.training.checkpoints import all_steps_damaged
from jitr.training.teacher import newest_checkpoint


def source_checkpoint(workdir: str) -> str:
  """``"best"`` when ``workdir`` holds a best checkpoint, else ``"latest"``.

  Raises:
    FileNotFoundError: ``workdir`` holds no saved step.
  """
  found = newest_checkpoint(workdir)
  if found is None:
    root = os.path.join(workdir, "checkpoints")
    raise FileNotFoundError(f"config.init_from: {root}: no checkpoint (expected best/ or latest/)")
  return found[0]


def damaged_source(workdir: str, damage: str) -> ValueError:
  """The one line refusing the source ``workdir`` whose checkpoint is damaged (``damage``
  names the checkpoint and files): the source is another run, so the advice is to point
  ``config.init_from`` at an intact workdir, never to change or delete this one."""
  return ValueError(
    f"config.init_from: {workdir}: its checkpoint is damaged: {damage}; point "
    "config.init_from at a jitr-train workdir with an intact checkpoint (this run only "
    f"reads {workdir}: it is the other run's, left as it is)"
  )


def read_source_config(workdir: str):
  """The ``config.json`` of the source ``workdir`` (absolute); ``FileNotFoundError`` when
  there is none."""
  saved = read_trained_config(workdir)
  if saved is None:
    raise FileNotFoundError(
      f"config.init_from: {os.path.join(workdir, CONFIG_NAME)}: no config.json; "
      "expected a jitr-train workdir"
    )
  return saved


def check_source(source: str) -> None:
  """Refuses, before the run loads its data or writes anything, a source workdir that
  cannot start it: no ``config.json`` (``FileNotFoundError``), no checkpoint
  (``FileNotFoundError``), or a checkpoint none of whose steps matches its manifest
  (``ValueError``, :func:`damaged_source`). Reads the source only."""
  workdir = paths.absolute(source)
  read_source_config(workdir)
  folder = os.path.join(workdir, "checkpoints", source_checkpoint(workdir))
  damage = all_steps_damaged(folder)
  if damage is not None:
    raise damaged_source(workdir, damage)


def shape_mismatch(theirs: Any, ours: Any) -> str | None:
  """``None`` when the two parameter trees have the same paths and shapes, else the first
  path that differs: ``'PATH' is (3, 4) there, (3, 5) here`` (``missing`` on one side)."""
  shapes = lambda tree: {  # noqa: E731
    jax.tree_util.keystr(path): tuple(leaf.shape)
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree)
  }
  there, here = shapes(theirs), shapes(ours)
  for path in sorted(there.keys() | here.keys()):
    a, b = there.get(path, "missing"), here.get(path, "missing")
    if a != b:
      return f"{path} is {a} there, {b} here"
  return None


def with_fresh_params(source: dict, fresh: Any, workdir: str, network: Network | None) -> dict:
  """``source``'s params, with this run's freshly initialised parts of them that the
  network may start fresh (:attr:`!jitr.models.Network.fresh_params`: VSRN's caption
  decoder, ``caption_model``) where this run has one and the source has none (an official
  VSRN checkpoint, or a run with ``caption_weight = 0``), saying so in the log."""
  params = dict(source)
  for key, what in (network.fresh_params if network is not None else {}).items():
    if key in params or key not in fresh:
      continue
    logging.warning("config.init_from: %s holds no %s: this run starts it fresh", workdir, what)
    params[key] = fresh[key]
  return params


def start_from(
  source: str,
  vocab: Vocab,
  train_split: pairs.RetrievalSplit,
  state: TrainState,
  constants: Mapping[str, Any] | None = None,
) -> TrainState:
  """``state`` with the params and model state of ``source``'s best checkpoint (latest
  without one); the optimizer state, step and random key stay ``state``'s (``constants``:
  this run's dataset constants, for a network that reads them).

  Raises:
    FileNotFoundError: ``source`` has no config.json or no checkpoint.
    ValueError: ``source`` was trained with another vocabulary or another network (a
      parameter of another shape), its config.json builds no model, or its checkpoint
      is damaged (:func:`damaged_source`); each message starts with ``config.init_from``.
  """
  workdir = paths.absolute(source)
  saved = read_source_config(workdir)
  difference = vocab_difference(load_workdir_vocab(os.path.join(workdir, "vocab.json")), vocab)
  if difference is not None:
    raise ValueError(
      f"config.init_from: {workdir} was trained with another vocabulary {difference}"
    )
  which = source_checkpoint(workdir)
  try:
    _, variables, _ = restore_variables(
      workdir, saved.to_dict(), len(vocab), train_split, which, constants
    )
  except DamagedSourceError as err:
    raise damaged_source(workdir, str(err)) from None
  except ValueError as err:
    raise ValueError(f"config.init_from: {workdir}: {err}") from None
  network = MODELS.get(network_name(saved.model))
  params = with_fresh_params(variables.pop("params"), state.params, workdir, network)
  mismatch = shape_mismatch({"params": params, **variables}, state.variables)
  if mismatch is not None:
    raise ValueError(
      f"config.init_from: {workdir} holds another network than this run's config.model: {mismatch}"
    )
  return state.replace(params=params, model_state=variables)
