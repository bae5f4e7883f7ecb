"""A network is one folder: a toy network written in a package of its own, registered with
one line, trains through ``train_and_evaluate`` on the built-in tiny dataset, and its
official checkpoint (a ``torch.save`` of its state dict) imports through
``jitr.experiment.official_import``, with nothing else of jitr told about it; the importer
recognises a checkpoint by the one registered format that holds it, whatever the
registry's order, and refuses one that none or two hold."""

from __future__ import annotations

import importlib
import json
import math
import sys
import textwrap

import ml_collections
import numpy as np
import pytest

from configs import default
from jitr import experiment
from jitr.experiment.official_import import (
  import_official,
  official_formats,
  read_official_weights,
)
from jitr.models import MODELS, Network
from jitr.models.official_checkpoint import OfficialCheckpointError
from jitr.models.official_format import ConvertedWeights, OfficialFormat

torch = pytest.importorskip("torch")

# The toy network's folder: its module, adapter, official format and registry entry.
TOY_PACKAGE = '''
"""A toy dual encoder: mean-pooled regions through a Dense layer, mean word embeddings."""

import flax.linen as nn
import jax.numpy as jnp

from jitr.models.common import lengths_to_mask, masked_mean
from jitr.models.official_format import ConvertedWeights, OfficialFormat
from jitr.models.retrieval_model import Network
from jitr.models.torch_state import StateDictReader
from jitr.models.vse import dual_encoder_model


def _unit(x):
  return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-8)


class Toy(nn.Module):
  vocab_size: int
  embed_dim: int = 8

  def setup(self):
    self.img = nn.Dense(self.embed_dim)
    self.embed = nn.Embed(self.vocab_size, self.embed_dim)

  def encode_image(self, images, image_mask):
    return _unit(self.img(masked_mean(images, image_mask)))

  def encode_text(self, tokens, lengths):
    mask = lengths_to_mask(lengths, tokens.shape[1])
    return _unit(masked_mean(self.embed(tokens), mask))

  def __call__(self, images, tokens, lengths, image_mask=None):
    return self.encode_image(images, image_mask), self.encode_text(tokens, lengths)


def build(config, vocab_size, constants):
  del constants
  return dual_encoder_model(Toy(vocab_size=vocab_size, **config))


def convert(flat):
  reader = StateDictReader(flat, "TOY state_dict")
  params = {
    "img": reader.linear("toy.img"),
    "embed": {"embedding": reader.take("toy.embed.weight", 2)},
  }
  reader.finish()
  vocab_size, embed_dim = params["embed"]["embedding"].shape
  img_dim = params["img"]["kernel"].shape[0]
  fields = {"vocab_size": vocab_size, "embed_dim": embed_dim}
  return ConvertedWeights("toy", fields, img_dim, params, {})


OFFICIAL = OfficialFormat("TOY", ("toy",), convert)
NETWORK = Network(build, settings_of=Toy, official=OFFICIAL)
'''

WORDS = ["<pad>", "<start>", "<end>", "<unk>", "a", "red", "blue", "circle", "square", "small"]
EMBED = 6


@pytest.fixture
def toy(tmp_path, monkeypatch):
  """The toy package, imported from a folder of its own and registered as ``"toy"``."""
  folder = tmp_path / "packages" / "toynet"
  folder.mkdir(parents=True)
  (folder / "__init__.py").write_text(textwrap.dedent(TOY_PACKAGE))
  monkeypatch.syspath_prepend(str(folder.parent))
  module = importlib.import_module("toynet")
  monkeypatch.setitem(MODELS, "toy", module.NETWORK)
  yield module
  sys.modules.pop("toynet", None)


def toy_config(tmp_path) -> ml_collections.ConfigDict:
  """One epoch of 5 steps of the toy network on jitr_shapes' tiny split, triplet loss."""
  config = default.get_config()
  config.shapes_config = "tiny"  # 40 / 10 / 10 images, 5 captions each
  config.data_dir = str(tmp_path / "tfds")
  config.graded = ml_collections.ConfigDict({})
  config.loss = ml_collections.ConfigDict({"triplet": {"weight": 1.0, "margin": 0.2}})
  config.model = ml_collections.ConfigDict({"name": "toy", "embed_dim": EMBED})
  config.num_epochs = 1
  config.batch_size = 40
  config.eval_batch_size = 50
  config.token_buckets = ()  # one caption width: the train step compiles once
  config.compilation_cache = False
  return config


def official_checkpoint(path, img_dim: int) -> dict[str, np.ndarray]:
  """A toy official checkpoint as a ``train.py`` would save it; returns its tensors."""
  rng = np.random.default_rng(0)
  state = {
    "img.weight": rng.normal(size=(EMBED, img_dim)).astype(np.float32),
    "img.bias": rng.normal(size=(EMBED,)).astype(np.float32),
    "embed.weight": rng.normal(size=(len(WORDS), EMBED)).astype(np.float32),
  }
  model = [{k: torch.from_numpy(v) for k, v in state.items()}]
  torch.save({"epoch": 3, "model": model, "best_rsum": 123.5, "opt": {}}, path)
  return state


@pytest.mark.slow
def test_a_network_in_a_folder_of_its_own_trains_and_imports(toy, tmp_path):
  config = toy_config(tmp_path)
  run = tmp_path / "run"
  experiment.train_and_evaluate(config, str(run))
  written = json.loads((run / "metrics.json").read_text())
  assert math.isfinite(written["full/rsum"]) and 0.0 <= written["full/rsum"] <= 600.0
  assert json.loads((run / "config.json").read_text())["model"]["name"] == "toy"

  img_dim = experiment.load_data(config, config.data_dir).splits["train"].images.shape[-1]
  checkpoint = tmp_path / "official" / "toy.pth"
  checkpoint.parent.mkdir()
  state = official_checkpoint(checkpoint, img_dim)
  weights = read_official_weights(checkpoint)
  assert weights.network == "toy" and weights.official is toy.OFFICIAL
  params = weights.converted.params
  np.testing.assert_array_equal(params["img"]["kernel"], state["img.weight"].T)
  np.testing.assert_array_equal(params["img"]["bias"], state["img.bias"])
  np.testing.assert_array_equal(params["embed"]["embedding"], state["embed.weight"])
  assert weights.fields == {"vocab_size": len(WORDS), "embed_dim": EMBED}

  vocab = tmp_path / "official" / "vocab.json"
  vocab.write_text(
    json.dumps(
      {
        "word2idx": {w: i for i, w in enumerate(WORDS)},
        "idx2word": {str(i): w for i, w in enumerate(WORDS)},
        "idx": len(WORDS),
      }
    )
  )
  imported = tmp_path / "imported"
  config.model.embed_dim = 16  # the weights fix it
  record = import_official(config, checkpoint, vocab, imported, progress=False)
  assert (record["network"], record["epoch"], record["best_rsum"]) == ("toy", 3, 123.5)
  saved = json.loads((imported / "config.json").read_text())
  assert saved["model"] == {"name": "toy", "embed_dim": EMBED}
  assert json.loads((imported / "vocab.json").read_text())["words"] == WORDS
  metrics = experiment.evaluate_workdir(str(imported), split="test")
  assert math.isfinite(metrics["full/rsum"])


def _unreadable(flat) -> ConvertedWeights:
  raise AssertionError("a refused checkpoint is never converted")


def test_formats_of_the_same_prefixes_never_both_hold_a_checkpoint():
  """VSRN's and VSE∞'s checkpoints are both [img_enc, txt_enc]: the text tower tells them
  apart, whatever the registry's order."""
  gru = {"img_enc.fc.weight": 0, "txt_enc.rnn.weight_ih_l0": 0}
  bert = {"img_enc.fc.weight": 0, "txt_enc.bert.embeddings.word_embeddings.weight": 0}
  two = [f for f in official_formats() if f.prefixes == ("img_enc", "txt_enc")]
  assert sorted(f.codebase for f in two) == ["VSE∞", "VSRN"]
  assert [[f.codebase for f in two if f.holds(flat)] for flat in (gru, bert)] == [
    ["VSRN"],
    ["VSE∞"],
  ]


def test_a_checkpoint_that_none_or_two_formats_hold_is_one_line(monkeypatch, tmp_path):
  path = tmp_path / "model.pth"
  torch.save({"model": [{"w": torch.ones(2)}] * 5}, path)
  with pytest.raises(OfficialCheckpointError) as err:
    read_official_weights(path)
  assert str(err.value) == (
    f"{path}: expected an official SGRAF, VSRN, CVSE or VSE∞ checkpoint, a dict whose "
    "'model' is the list [img_enc, txt_enc, sim_enc] (SGRAF), [img_enc, txt_enc] (VSRN, "
    "VSE∞) or 8 state dicts [img_enc, ..., Multi_feature_fusing] (CVSE)"
  )
  torch.save({"model": [{"w": torch.ones(2)}]}, path)
  for name in ("A", "B"):
    official = OfficialFormat(name, (name.lower(),), _unreadable)
    monkeypatch.setitem(MODELS, name.lower(), Network(MODELS["vse"].build, official=official))
  with pytest.raises(OfficialCheckpointError) as err:
    read_official_weights(path)
  assert str(err.value) == (
    f"{path}: its state dicts fit the official formats of A or B: the checkpoint is "
    "ambiguous to jitr-import"
  )
