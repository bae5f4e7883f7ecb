"""A run's model and its first train state, as ``config.model`` and ``config.optimizer`` say."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
import optax

from jitr import training
from jitr.data import pairs
from jitr.models import MODELS, RetrievalModel, make_model
from jitr.models.registry import network_name


def example_inputs(split: pairs.RetrievalSplit, model: RetrievalModel) -> dict:
  """The model's inputs (:attr:`RetrievalModel.inputs`) of ``split``'s first two captions
  and their images: what ``model.init`` traces the shapes from."""
  first = pairs.make_batch(split, np.arange(min(2, split.num_captions)))
  return {k: first[k] for k in model.inputs if k in first}


def model_settings(config) -> dict[str, Any]:
  """The settings ``make_model`` gets: ``config.model``'s, and for a network of WordPiece
  captions (:attr:`!jitr.models.Network.wordpiece`: ``"vseinf"``) ``pretrained =
  config.text.pretrained`` (the BERT folder whose ``vocab.txt`` tokenised the captions gives
  the network's BERT; ``config.model`` has no ``pretrained`` of its own:
  :func:`!jitr.experiment.run_config.check_train_config`). ``config``: a run config or its
  JSON (a workdir's ``config.json``)."""
  model = config["model"]
  settings = dict(model.to_dict() if hasattr(model, "to_dict") else model)
  network = MODELS.get(network_name(settings))
  if network is not None and network.wordpiece:
    settings["pretrained"] = config["text"]["pretrained"]
  return settings


def template_steps(train_split: pairs.RetrievalSplit, batch_size: int) -> int:
  """The steps per epoch a restore template's optimizer is built with: full batches of
  ``train_split``, at least 1. A checkpoint's state does not depend on the schedule's length,
  so importing or evaluating a workdir whose train split holds fewer captions than
  ``batch_size`` (no training batch at all) still restores it."""
  return max(1, train_split.num_captions // batch_size)


def initial_state(
  config,
  vocab_size: int,
  train_split: pairs.RetrievalSplit,
  steps_per_epoch: int,
  constants: Mapping[str, Any] | None = None,
  *,
  shapes_only: bool = False,
) -> tuple[RetrievalModel, training.TrainState]:
  """``(model, TrainState)``: the :class:`jitr.models.RetrievalModel` ``config.model`` names
  (:func:`!jitr.experiment.model_state.model_settings`, ``jitr.models.MODELS``; ``name``
  defaults to ``"vse"``; ``constants``: the dataset constants, ``{"concepts": ...}`` for
  CVSE), initialised from ``config.seed``; its non-param collections (BatchNorm statistics) go to
  ``state.model_state``. ``shapes_only``: the state traced, not computed (its arrays
  ``jax.ShapeDtypeStruct`` s on JAX's default device, its ``rng`` the concrete key: the
  template a checkpoint is restored into; no program is compiled or run)."""
  model = make_model(model_settings(config), vocab_size, constants)
  tx = training.make_optimizer(
    config.optimizer.to_dict(),
    steps_per_epoch=steps_per_epoch,
    total_steps=steps_per_epoch * config.num_epochs,
    layer_ranks=model.layer_ranks,
  )
  inputs = example_inputs(train_split, model)
  if shapes_only:
    return model, abstract_train_state(model, tx, inputs, config.seed)
  variables = jax.jit(model.init)(jax.random.key(config.seed), inputs)
  return model, training.create_train_state(variables, tx, jax.random.key(config.seed + 1))


def abstract_train_state(
  model: RetrievalModel, tx: optax.GradientTransformation, inputs: dict, seed: int = 0
) -> training.TrainState:
  """``create_train_state(model.init(key(seed), inputs), tx, key(seed + 1))`` under
  ``jax.eval_shape``: every array a ``jax.ShapeDtypeStruct`` on JAX's default device (where
  the computed state would be, so a checkpoint is restored there), except ``rng``, the
  concrete key ``seed + 1`` (restoring a checkpoint reads the key's implementation from
  it)."""
  like = jax.eval_shape(
    lambda: training.create_train_state(
      model.init(jax.random.key(seed), inputs), tx, jax.random.key(seed + 1)
    )
  )
  default = jax.device_put(np.zeros((), np.int32)).sharding
  like = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=default), like)
  return like.replace(rng=jax.random.key(seed + 1))
