"""Short SGR, VSRN and CVSE runs on tiny jitr_shapes through jitr.experiment and ``fit``."""

import jax
import ml_collections
import numpy as np
import pytest

from configs import default
from jitr import experiment, losses, training
from jitr.data import pairs
from jitr.data.vocab import bucket_length
from jitr.experiment.run_concepts import concept_inputs
from jitr.models.cvse.adapter import concept_graph
from jitr.training.loop import EpochPlan, LoopHooks, fit

MODELS = {
  # length_buckets=1: one scoring branch to compile (the cut is exact, so it trains alike)
  "sgr": dict(
    name="sgr", embed_dim=32, word_dim=16, sim_dim=16, num_region=3, block_size=8,
    length_buckets=1,
  ),
  "vsrn": dict(
    name="vsrn", embed_dim=32, word_dim=16, gcn_layers=2, caption_hidden_dim=32,
    caption_word_dim=16,
  ),
  "cvse": dict(name="cvse", embed_dim=32, word_dim=16, num_region=3),
}  # fmt: skip


def _config(model: dict) -> ml_collections.ConfigDict:
  config = default.get_config()
  config.shapes_config = "tiny"
  config.graded.relevance = "oracle"
  config.model = ml_collections.ConfigDict(model)
  config.loss = ml_collections.ConfigDict({"triplet": {"mining": "sum"}})
  config.optimizer.learning_rate = 2e-3
  config.optimizer.decay_epochs = ()
  config.batch_size = 40
  return config


def _run(config, data_dir, epochs):
  """Per-step metrics of ``epochs`` epochs on 2 devices, and the initial / final states."""
  data = experiment.load_data(config, data_dir)
  splits, vocab = data.splits, data.vocab
  steps = pairs.steps_per_epoch(splits["train"], config.batch_size)
  concepts = concept_inputs(data.concepts)
  model, state = experiment.initial_state(
    config, len(vocab), splits["train"], steps, {"concepts": concepts}
  )
  parallel = training.DataParallel(
    training.make_train_step(losses.objective(config.loss), model=model),
    devices=jax.devices()[:2],
    donate=False,  # the initial state is evaluated afterwards
  )
  # Every batch padded to the split's one token bucket: the step compiles once (per-batch
  # buckets would compile it once per distinct width). The encoders mask by ``lengths``.
  width = bucket_length(splits["train"].lengths, (8, 12, 16, 24, 32, 48))

  def epoch_batches(epoch):
    for batch in pairs.epoch_batches(
      splits["train"], batch_size=config.batch_size, seed=0, epoch=epoch
    ):
      batch["tokens"] = splits["train"].tokens[batch["caption_indices"], :width]
      yield batch

  seen = []
  final, finished = fit(
    state,
    parallel=parallel,
    plan=EpochPlan(epoch_batches=epoch_batches, steps_per_epoch=steps, num_epochs=epochs),
    hooks=LoopHooks(on_step=lambda step, m: seen.append({k: float(v) for k, v in m.items()})),
    prefetch=0,
  )
  assert finished and len(seen) == steps * epochs
  return model, splits, state, final, seen, steps


def _epoch_means(seen, steps, key):
  values = np.array([m[key] for m in seen]).reshape(-1, steps)
  return values.mean(axis=1)


@pytest.mark.slow
def test_sgr_and_vsrn_learn_on_tiny_shapes(tmp_path):
  data_dir = str(tmp_path / "tfds")
  # SGR (pairwise): the triplet loss of the last epoch well below the first, and the
  # train RSUM (scored by score_split, eval mode) well above the untrained model's.
  config = _config(MODELS["sgr"])
  config.optimizer.learning_rate = 1e-2  # sigmoid scores start flat: a higher rate
  model, splits, initial, sgr_state, seen, steps = _run(config, data_dir, epochs=4)
  loss = _epoch_means(seen, steps, "loss")
  assert loss[-1] < 0.75 * loss[0], loss  # measured: 15.2 -> 9.9
  assert sgr_state.model_state["batch_stats"]  # VisualSA / no SAF: running stats kept
  evaluator = experiment.Evaluator(model, splits, None, None, batch_size=100)
  before, after = evaluator("train", initial.variables), evaluator("train", sgr_state.variables)
  # measured: 80.5 -> 294.5
  assert after["full/rsum"] >= before["full/rsum"] + 150, (before["full/rsum"], after["full/rsum"])
  # VSRN: both the ranking loss and the caption NLL fall; validation RSUM rises.
  model, splits, initial, final, seen, steps = _run(_config(MODELS["vsrn"]), data_dir, epochs=4)
  ranking, caption = (
    _epoch_means(seen, steps, "loss/triplet"),
    _epoch_means(seen, steps, "loss/caption"),
  )
  assert ranking[-1] < 0.7 * ranking[0], ranking  # measured: 15.5 -> 7.3
  assert caption[-1] < 0.95 * caption[0], caption  # measured: 59.9 -> 53.2
  evaluator = experiment.Evaluator(model, splits, None, None, batch_size=100)
  before, after = evaluator("train", initial.variables), evaluator("train", final.variables)
  # measured: 73.0 -> 349.5
  assert after["full/rsum"] >= before["full/rsum"] + 150, (before["full/rsum"], after["full/rsum"])


def concept_auc(scores: np.ndarray, labels: np.ndarray) -> float:
  """Mean over images of the ROC AUC of ``scores`` at telling the image's labelled concepts
  from the others (ties count one half): 0.5 for a random ranking."""
  aucs = []
  for row, lab in zip(np.asarray(scores), np.asarray(labels) > 0):
    pos, neg = row[lab][:, None], row[~lab][None, :]
    aucs.append(float(np.mean(pos > neg) + 0.5 * np.mean(pos == neg)))
  return float(np.mean(aucs))


@pytest.mark.slow
def test_cvse_learns_on_tiny_shapes(tmp_path):
  """CVSE (its instance / consensus triplets and concept KL as auxiliary losses) on the 40
  training images: its loss terms fall, the train RSUM rises well above the untrained
  model's, and its visual concept predictions rank an image's labelled concepts above the
  others (per-image AUC) clearly on the training images and better than chance on the
  held-out test images."""
  config = _config(MODELS["cvse"])
  config.concepts.num_concepts = 20
  config.batch_size = 10  # 4 steps an epoch
  data_dir = str(tmp_path / "tfds")
  model, splits, initial, final, seen, steps = _run(config, data_dir, epochs=12)
  for name in ("triplet", "instance", "concept_kl"):
    values = _epoch_means(seen, steps, f"loss/{name}")
    assert values[-1] < 0.6 * values[0], (
      name,
      values,
    )  # measured: 3.5 -> 0.59, 0.67 -> 0.30, 1.46 -> 0.08
  evaluator = experiment.Evaluator(model, splits, None, None, batch_size=100)
  before, after = evaluator("train", initial.variables), evaluator("train", final.variables)
  # measured: 79.5 -> 528
  assert after["full/rsum"] >= before["full/rsum"] + 200, (before["full/rsum"], after["full/rsum"])
  concepts = concept_inputs(experiment.load_data(config, data_dir).concepts)

  def visual_auc(split):
    scores = model.module.apply(
      final.variables,
      split.images,
      split.image_mask,
      concepts.vectors,
      concept_graph(concepts),
      method="embed_image",
    ).concept_scores
    return concept_auc(scores, split.concept_labels)

  train_auc, test_auc = visual_auc(splits["train"]), visual_auc(splits["test"])
  assert train_auc >= 0.75, train_auc  # measured: 0.82
  assert test_auc >= 0.55, test_auc  # measured: 0.60 (chance 0.5)
