"""The Flax variables that a jitr-train workdir's checkpoint holds, restored for another run:
a teacher's embeddings (``teacher:WORKDIR``) and the start of a fine-tuning run
(``config.init_from``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jitr import paths, training
from jitr.data import pairs
from jitr.experiment.model_state import abstract_train_state, example_inputs, model_settings
from jitr.models import RetrievalModel, make_model
from jitr.training.checkpoints import CheckpointCorruptError, Checkpoints


class DamagedSourceError(ValueError):
  """Another run's checkpoint (a teacher's, an ``init_from`` source's) that cannot be
  restored: the message says which checkpoint and files are damaged, without advice (that
  workdir is the other run's: the reader says what to give instead, never to delete it)."""


def restore_variables(
  workdir: str,
  saved_config: Mapping[str, Any],
  vocab_size: int,
  train_split: pairs.RetrievalSplit,
  which: str,
  constants: Mapping[str, Any] | None = None,
) -> tuple[RetrievalModel, dict[str, Any], int]:
  """``(model, variables, step)`` of ``workdir``'s ``which`` checkpoint (``"best"`` or
  ``"latest"``): the model and a train state shaped as ``saved_config`` (the workdir's
  ``config.json``: its model and optimizer) builds them, traced, not computed, then filled
  from the checkpoint. ``constants``: the dataset constants, for a network that reads them
  (CVSE's concepts).

  Raises:
    DamagedSourceError: the ``which`` checkpoint and every one it may fall back to are
      damaged.
    ValueError: ``saved_config`` builds no model or optimizer (``its config.json: ...``),
      or no ``which`` checkpoint could be restored.
  """
  try:
    model = make_model(model_settings(saved_config), vocab_size, constants)
    tx = training.make_optimizer(
      dict(saved_config["optimizer"]), steps_per_epoch=1, layer_ranks=model.layer_ranks
    )
  except (KeyError, ValueError) as err:
    raise ValueError(f"its config.json: {err}") from None
  like = abstract_train_state(model, tx, example_inputs(train_split, model))
  try:
    with Checkpoints(paths.absolute(workdir)) as checkpoints:
      state = checkpoints.restore(like, which=which)
  except CheckpointCorruptError as err:  # its advice is for the run that owns the workdir
    raise DamagedSourceError(err.damage) from None
  if state is None:
    raise ValueError(f"no {which} checkpoint could be restored")
  return model, state.variables, int(state.step)
