"""CMAL²R's experiments on generated labelled vectors with the real widths and classes
(Wikipedia: 4096-d images, 100-d texts, 10 classes, one each; Pascal: 512-d and 399-d, 20
classes, one to three each), small row counts and class structure in the vectors: the
two-branch network trained with CMAL²R's loss and with the triplet beats chance class MAP
by a wide margin, and the evaluation's class MAP of both directions is sklearn's average
precision per query, averaged."""

import numpy as np
import pytest

from configs import paper
from jitr import experiment
from jitr.models import make_model
from tests.labelled_folders import PASCAL, WIKI, chance_class_map, write_labelled

SHAPES = {"wiki": WIKI, "pascal": PASCAL}
# The noise of the generated vectors (a pair of several classes has a weaker class signal).
NOISE = {"wiki": 3.0, "pascal": 1.5}
# Class MAP (percent) above chance that a trained network must reach in each direction and
# on average. Chance is the class MAP of a random ranking, about the fraction of the test
# pairs sharing a class with a pair (Wikipedia's mean class frequency): 10.4 here for
# Wikipedia, 18.1 for Pascal. Measured (seeds fixed, 8 host devices): Wikipedia 82.8
# (CMAL²R) and 73.8 (triplet), Pascal 63.4 and 44.2; the smallest direction 44.1.
MARGIN = 20.0


def _config(dataset, loss, folder):
  """The paper config at the test's size: narrower branches, 2 epochs of 15 steps."""
  config = paper.get_config(f"{dataset},twobranch,{loss}")
  config.labelled.folder = str(folder)
  config.labelled.val_pairs = 100
  config.model.image_hidden = config.model.text_hidden = (64,)
  config.model.embed_dim = 64
  config.batch_size = 40
  config.num_epochs = 2
  config.optimizer.learning_rate = 3e-3
  config.log_every_steps = 20
  return config


@pytest.mark.parametrize("loss", ["cmal2r", "triplet"])
@pytest.mark.parametrize("dataset", ["wiki", "pascal"])
def test_the_two_branch_network_beats_chance_class_map(tmp_path, dataset, loss):
  counts = {"train": 700, "test": 200}  # 100 training pairs held out for validation
  data = write_labelled(tmp_path / "data", SHAPES[dataset], counts, noise=NOISE[dataset])
  chance = 100 * chance_class_map(data["test"][2])  # wiki: about 1/10, the class frequency
  config = _config(dataset, loss, tmp_path / "data")
  metrics = experiment.train_and_evaluate(config, str(tmp_path / "run")).metrics
  for key in ("class/i2t/mAP", "class/t2i/mAP", "class/mAP"):
    assert metrics[key] >= chance + MARGIN, (key, metrics[key], chance)
  assert metrics["class/mAP"] == pytest.approx(
    (metrics["class/i2t/mAP"] + metrics["class/t2i/mAP"]) / 2
  )
  assert "full/rsum" in metrics  # the usual metrics beside


def _sklearn_map(sim, query_labels, gallery_labels):
  """Mean over queries with a relevant item of sklearn's average precision, relevant =
  sharing a class."""
  from sklearn.metrics import average_precision_score

  relevant = (query_labels.astype(int) @ gallery_labels.T.astype(int)) > 0
  aps = [average_precision_score(r, s) for r, s in zip(relevant, sim) if r.any()]
  return 100 * float(np.mean(aps))


@pytest.mark.parametrize("dataset", ["wiki", "pascal"])
def test_the_evaluation_reports_class_map_both_ways_as_sklearn(tmp_path, dataset):
  data = write_labelled(tmp_path / "data", SHAPES[dataset], {"train": 8, "val": 4, "test": 60})
  config = _config(dataset, "cmal2r", tmp_path / "data")
  config.labelled.val_pairs, config.labelled.val_name = 0, "val"
  loaded = experiment.load_data(config, str(tmp_path))
  labels = data["test"][2]
  np.testing.assert_array_equal(loaded.splits["test"].class_labels, labels)
  model = make_model(config.model, 0)
  evaluator = experiment.Evaluator(model, loaded.splits, None, None, batch_size=16)
  sim = np.random.default_rng(0).normal(size=(60, 60)).astype(np.float32)
  metrics = evaluator("test", None, sim=sim)
  assert metrics["class/i2t/mAP"] == pytest.approx(_sklearn_map(sim, labels, labels), abs=1e-6)
  assert metrics["class/t2i/mAP"] == pytest.approx(_sklearn_map(sim.T, labels, labels), abs=1e-6)
  assert metrics["class/mAP"] == pytest.approx(
    (metrics["class/i2t/mAP"] + metrics["class/t2i/mAP"]) / 2
  )
