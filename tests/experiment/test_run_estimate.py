"""A run's estimate, measured before it starts: the steps of its schedule, the measured
step, and the checkpoint disk (three saves of the train state), on a CVSE paper run (its
concepts built from the captions, as jitr-train builds them)."""

import jax
import numpy as np

from jitr.experiment.run_estimate import SAVES_KEPT, estimate_run, step_config
from tests.apps.test_import_official import tiny_paper_config
from tests.file_fixtures import write_precomp


def test_a_cvse_run_is_measured_with_its_concepts(tmp_path, monkeypatch):
  write_precomp(tmp_path / "data", n_images=40)
  monkeypatch.chdir(tmp_path)
  config = tiny_paper_config("f30k,cvse,sndcg")
  config.precomp_root = str(tmp_path / "data")
  config.data_dir = str(tmp_path / "cache")
  config.num_epochs = 3
  config.model.embed_dim = config.model.word_dim = 8
  config.concepts.num_concepts = 4
  config.vocab_min_count = 1
  estimate = estimate_run(config, steps=2)
  assert estimate.steps == (40 * 5 // 16) * 3  # full batches per epoch × epochs
  assert estimate.step_s > 0 and estimate.train_s == estimate.step_s * estimate.steps
  assert estimate.compile_s > estimate.step_s  # the first step compiles: far slower
  assert estimate.checkpoint_bytes == SAVES_KEPT * estimate.state_bytes
  assert estimate.device == f"{jax.device_count()} × cpu"
  # the state's bytes: every parameter is float32, counted with Adam's two moments
  from jitr.experiment import initial_state, load_data
  from jitr.experiment.run_concepts import dataset_constants

  measured = step_config(config)
  data = load_data(measured, measured.data_dir, teachers=False)
  _, state = initial_state(
    measured, len(data.vocab), data.splits["train"], 7, dataset_constants(data.concepts)
  )
  params = sum(int(np.asarray(p).nbytes) for p in jax.tree.leaves(state.params))
  assert estimate.state_bytes >= 3 * params
  assert estimate.state_bytes == sum(
    int(leaf.nbytes) for leaf in jax.tree.leaves(state) if hasattr(leaf, "nbytes")
  )
  # the step is the triplet's alone: no graded inputs to precompute
  assert dict(measured.graded) == {} and list(measured.loss) == ["triplet"]
