"""The registry's one signature: every network builds as ``MODELS[name](config, vocab_size,
constants)`` and declares the batch keys its model reads and the dataset constants its
builder needs; the train step gathers every other batch key as the queries' fields."""

import json
import os
import tempfile

import jax
import optax
import pytest

from jitr import losses, training
from jitr.models import MODELS, Network, RetrievalModel, make_model
from jitr.models.retrieval_model import INPUTS
from tests.data.karpathy_folder import TINY_TOWER
from tests.training import model_zoo

CONSTANTS = {"concepts": model_zoo.concepts()}
TRIPLET = losses.objective({"triplet": {"mining": "max"}})


def _tower() -> str:
  """The tiny CLIP tower's open_clip config, its vocabulary model_zoo's, as a file."""
  path = os.path.join(tempfile.mkdtemp(), "tiny-clip.json")
  text = {**TINY_TOWER["text_cfg"], "vocab_size": model_zoo.VOCAB}
  with open(path, "w") as f:
    json.dump({**TINY_TOWER, "text_cfg": text}, f)
  return path


def _config(name):
  if name == "clip":  # pixels, not the zoo's regions: built here, run in tests/models/clip
    return {"tower": _tower()}
  return {k: v for k, v in model_zoo.CONFIGS[name].items() if k != "name"}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_network_builds_through_the_one_signature(name):
  network = MODELS[name]
  assert isinstance(network, Network)
  model = network(_config(name), model_zoo.VOCAB, CONSTANTS)
  assert isinstance(model, RetrievalModel)
  assert model.inputs == network.inputs
  by_name = make_model({"name": name, **_config(name)}, model_zoo.VOCAB, CONSTANTS)
  assert by_name.inputs == network.inputs
  assert by_name.pairwise == model.pairwise


def test_each_network_declares_its_inputs_and_constants():
  assert INPUTS == ("images", "image_mask", "tokens", "lengths")
  declared = {name: (network.inputs, network.constants) for name, network in MODELS.items()}
  assert declared == {
    "vse": (INPUTS, ()),
    "sgr": (INPUTS, ()),
    "saf": (INPUTS, ()),
    "vsrn": (INPUTS, ()),
    "cvse": (("images", "image_mask", "tokens", "lengths", "concept_labels"), ("concepts",)),
    "vseinf": (INPUTS, ()),
    "twobranch": (("images", "text_vectors"), ()),
    "clip": (("images", "tokens"), ()),
  }


@pytest.mark.parametrize("constants", [None, {}, {"concepts": None}, {"vectors": 1}])
def test_cvse_without_the_datasets_concepts_fails_with_one_line(constants):
  with pytest.raises(ValueError) as err:
    make_model({"name": "cvse"}, 10, constants)
  assert str(err.value) == (
    "config.model (name='cvse'): CVSE needs the dataset's concepts (word vectors and "
    "co-occurrence statistics: ConceptInputs(...)): make_model(config, vocab_size, "
    "{'concepts': ...})"
  )


@pytest.mark.parametrize("name", ["vse", "cvse"])
def test_the_step_gathers_every_batch_key_but_the_models_inputs(name):
  """What the train step gives the graded function (the queries' fields) is the batch
  less the model's declared inputs: CVSE's concept labels are its input, for VSE
  they are just another field of the batch."""
  model = model_zoo.model(name)
  batch = model_zoo.region_batch()
  seen = []

  def graded_fn(images, captions, positives):
    seen.append((set(images), set(captions)))
    return {}

  step = training.make_train_step(TRIPLET, model=model, graded_fn=graded_fn, axis_name=None)

  def init_and_step(batch):
    variables = model.init(jax.random.key(0), batch)
    state = training.create_train_state(variables, optax.sgd(0.1), jax.random.key(1))
    return step(state, batch)

  jax.eval_shape(init_and_step, batch)  # traced, not compiled: the step's inputs are seen
  fields = (set(batch) - set(model.inputs)) | {"pair_index"}
  assert seen and all(s == (fields, fields) for s in seen)
  assert ("concept_labels" in fields) == (name != "cvse")
  assert {"images", "tokens", "lengths"}.isdisjoint(fields)
