"""jitr-eval with several workdirs: the mean of the members' similarity matrices."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import jax
import ml_collections
import numpy as np
import pytest

from configs import default
from jitr import experiment
from jitr.data import pairs
from jitr.evaluation import evaluate_retrieval, mean_similarity
from jitr.evaluation.report import write_text_atomic
from jitr.experiment import evaluate
from jitr.experiment.loaded_data import LoadedData
from jitr.experiment.workdir import data_dir
from jitr.models import sgraf_similarity
from jitr.training.checkpoints import Checkpoints
from tests.file_fixtures import snapshot, write_precomp

REPO = pathlib.Path(__file__).resolve().parents[2]


def tiny_config(seed: int) -> ml_collections.ConfigDict:
  config = default.get_config()
  config.shapes_config = "tiny"  # 40 / 10 / 10 images, 5 captions each
  config.graded = ml_collections.ConfigDict({"relevance": "oracle"})
  config.model.embed_dim = 16
  config.model.word_dim = 8
  config.batch_size = 40
  config.eval_batch_size = 8  # divides neither 10 images nor 50 captions
  config.seed = seed
  config.token_buckets = ()  # one caption width: the train step compiles once
  return config


def make_workdir(workdir: pathlib.Path, config):
  """What jitr-train leaves for jitr-eval: config.json, vocab.json and a best checkpoint
  (here the initial state of ``config.seed``: no training). Returns the model, the saved
  variables and the splits."""
  workdir.mkdir(parents=True)
  data = experiment.load_data(config, data_dir(config, str(workdir)))
  splits, vocab = data.splits, data.vocab
  vocab.save(str(workdir / "vocab.json"))
  write_text_atomic(str(workdir / "config.json"), config.to_json_best_effort(indent=2))
  steps = pairs.steps_per_epoch(splits["train"], config.batch_size)
  model, state = experiment.initial_state(config, len(vocab), splits["train"], steps)
  checkpoints = Checkpoints(str(workdir))
  checkpoints.save_best(state, {"rsum": 0.0})
  checkpoints.close()
  return model, state.variables, splits


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory):
  """``(root, {name: (model, saved variables, splits)})`` of workdirs ``root/a`` and ``root/b``."""
  root = tmp_path_factory.mktemp("ensemble")
  members = {
    name: make_workdir(root / name, tiny_config(seed)) for name, seed in (("a", 0), ("b", 1))
  }
  return root, members


def _member_sim(member) -> tuple[np.ndarray, np.ndarray]:
  """The test split's ``img @ txt.T`` from the flax towers under the variables the workdir's
  checkpoint was written from, run on the whole split at once (independent of
  score_split's batching and of jitr-eval's restore), and the split's caption owners."""
  model, variables, splits = member
  test = splits["test"]
  img = jax.jit(model.encode_images)(variables, test.images, test.image_mask)
  txt = jax.jit(model.encode_captions)(variables, test.tokens, test.lengths)
  return np.asarray(img) @ np.asarray(txt).T, test.caption_image


def test_the_traced_template_restores_the_saved_state_bit_for_bit(workdirs):
  """jitr-eval restores into ``initial_state(..., shapes_only=True)``: every array a
  ``jax.ShapeDtypeStruct`` of the computed state's shape, dtype and device, the rng a
  concrete key; the restored state equals the saved one (here the computed initial state
  of the workdir's config) leaf for leaf, bit for bit, on the same device."""
  root, _ = workdirs
  member = evaluate.load_member(str(root / "a"))
  config, train = member.config, member.data.splits["train"]
  steps = pairs.steps_per_epoch(train, config.batch_size)
  vocab_size = len(member.data.vocab)
  _, saved = experiment.initial_state(config, vocab_size, train, steps)
  _, like = experiment.initial_state(config, vocab_size, train, steps, shapes_only=True)
  arrays = lambda state: {  # noqa: E731
    jax.tree_util.keystr(path): leaf
    for path, leaf in jax.tree_util.tree_leaves_with_path(state.replace(rng=None))
  }
  computed, traced = arrays(saved), arrays(like)
  assert computed.keys() == traced.keys() and len(computed) > 10
  for name, leaf in traced.items():
    assert isinstance(leaf, jax.ShapeDtypeStruct), name
    want = computed[name]
    assert (leaf.shape, leaf.dtype, leaf.sharding) == (want.shape, want.dtype, want.sharding)
  assert jax.random.key_impl(like.rng) == jax.random.key_impl(saved.rng)
  _, restored = evaluate.restore_member(member, "best")
  got = arrays(restored)
  assert got.keys() == computed.keys()
  for name, leaf in got.items():
    assert leaf.sharding == computed[name].sharding, name
    np.testing.assert_array_equal(np.asarray(leaf), np.asarray(computed[name]), err_msg=name)
  np.testing.assert_array_equal(jax.random.key_data(restored.rng), jax.random.key_data(saved.rng))


def test_mean_similarity_of_two_is_sgraf_mean():
  rng = np.random.default_rng(0)
  a, b = rng.normal(size=(2, 3, 7)).astype(np.float32)
  np.testing.assert_array_equal(mean_similarity([a, b]), np.asarray(sgraf_similarity(a, b)))
  np.testing.assert_allclose(mean_similarity([a, b, a]), (2 * a + b) / 3, rtol=1e-6)
  with pytest.raises(ValueError, match="one shape"):
    mean_similarity([a, b[:, :6]])


def test_caption_order_mismatch_is_named():
  config = ml_collections.ConfigDict({"dataset": "f30k_precomp"})

  def member(owner):
    split = pairs.RetrievalSplit(
      images=np.zeros((3, 2, 4), np.float32),
      tokens=np.ones((6, 2), np.int32),
      lengths=np.full(6, 2, np.int32),
      caption_image=np.asarray(owner),
    )
    return evaluate.Member("w", config, "", LoadedData({"test": split}, None, None, {}, None))

  same = evaluate.split_mismatch(member([0, 0, 1, 1, 2, 2]), member([0, 0, 1, 1, 2, 2]), "test")
  assert same is None
  reason = evaluate.split_mismatch(member([0, 0, 1, 1, 2, 2]), member([0, 1, 0, 1, 2, 2]), "test")
  assert reason == "test split caption order differs: caption 1 belongs to image 1, not 0"


def test_mismatched_workdirs_are_refused_and_left_untouched(tmp_path):
  """Refused from the configs and data alone (no checkpoint is opened), nothing written."""
  write_precomp(tmp_path / "data", 10, n_eval=10)
  first, other = tmp_path / "shapes_run", tmp_path / "precomp_run"
  precomp = tiny_config(0)
  precomp.dataset = "f30k_precomp"
  precomp.precomp_root = str(tmp_path / "data")
  precomp.graded = ml_collections.ConfigDict({"relevance": "vectors:sentence"})
  for workdir, config in ((first, tiny_config(0)), (other, precomp)):
    workdir.mkdir()
    write_text_atomic(str(workdir / "config.json"), config.to_json_best_effort(indent=2))
  before = {w: snapshot(w) for w in (first, other)}
  with pytest.raises(ValueError) as err:
    evaluate.evaluate_workdir(str(first), split="test", ensemble=[str(other)])
  assert str(err.value) == (
    f"--ensemble: {other} does not match {first}: dataset 'f30k_precomp' != 'jitr_shapes'"
  )
  assert {w: snapshot(w) for w in (first, other)} == before


def _jitr_eval(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
  exe = shutil.which("jitr-eval") or str(pathlib.Path(sys.executable).with_name("jitr-eval"))
  env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's jitr
  return subprocess.run([exe, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_documented_ensemble_command_scores_the_mean_similarity(workdirs, tmp_path):
  root, members = workdirs
  a, b = root / "a", root / "b"
  out = _jitr_eval(f"--workdir={a}", f"--ensemble={b}", "--split=test", cwd=tmp_path)
  assert out.returncode == 0, out.stderr[-3000:]
  report = a / "eval_test_ensemble"
  with open(report / "metrics.json") as f:
    written = json.load(f)
  assert [m["workdir"] for m in written["members"]] == [str(a), str(b)]
  assert [m["step"] for m in written["members"]] == [0, 0]
  assert not (a / "eval_test").exists()  # the single-model report is not touched
  assert (report / "queries.png").stat().st_size > 0
  (sim_a, owner), (sim_b, _) = _member_sim(members["a"]), _member_sim(members["b"])
  assert np.abs(sim_a - sim_b).max() > 0.05  # two different models
  expected = evaluate_retrieval(mean_similarity([sim_a, sim_b]), caption_to_image=owner)
  for key in ("full/rsum", "full/i2t/R@1", "full/t2i/R@5"):
    assert written[key] == pytest.approx(expected[key], abs=1e-6), key
  single = evaluate_retrieval(sim_a, caption_to_image=owner)
  assert any(
    abs(single[k] - expected[k]) > 1e-6 for k in ("full/rsum", "full/i2t/R@1", "full/t2i/R@1")
  )


def _whole_split_score(model, variables, split) -> np.ndarray:
  """``model.score`` of the whole split at once, in one jitted call (independent of
  score_split's blocks)."""

  def score(variables, images, image_mask, tokens, lengths):
    image_reps = model.encode_images(variables, images, image_mask)
    caption_reps = model.encode_captions(variables, tokens, lengths)
    return model.score(variables, image_reps, caption_reps)[0]

  args = (split.images, split.image_mask, split.tokens, split.lengths)
  return np.asarray(jax.jit(score)(variables, *args))


@pytest.mark.slow
def test_sgr_and_saf_workdirs_ensemble_to_sgraf(tmp_path):
  """SGRAF = jitr-eval of an SGR workdir with an SAF workdir: the metrics of
  ``sgraf_similarity`` of the two models' whole-split ``score`` under the variables each
  workdir's checkpoint was written from (not restored again: no second init compile)."""
  members = {}
  for name in ("sgr", "saf"):
    config = tiny_config(0)
    config.model = ml_collections.ConfigDict(
      dict(
        name=name, img_dim=128, word_dim=8, embed_dim=16, sim_dim=8, sgr_step=2, num_region=3,
        length_buckets=1,
      )
    )  # fmt: skip
    members[name] = make_workdir(tmp_path / name, config)
  metrics = evaluate.evaluate_workdir(
    str(tmp_path / "sgr"), split="test", ensemble=[str(tmp_path / "saf")]
  )
  sims = []
  for model, variables, splits in members.values():
    test = splits["test"]
    sims.append(_whole_split_score(model, variables, test))
  assert np.abs(sims[0] - sims[1]).max() > 0.01
  expected = evaluate_retrieval(
    np.asarray(sgraf_similarity(*sims)), caption_to_image=test.caption_image
  )
  for key in ("full/rsum", "full/i2t/R@5", "full/t2i/R@5", "full/t2i/meanr"):
    assert metrics[key] == pytest.approx(expected[key], abs=1e-6), key


def test_damaged_workdir_config_is_named_with_its_line(tmp_path):
  """jitr-eval reads a workdir's config.json through the same checked reader as jitr-train."""
  (tmp_path / "config.json").write_text('{"seed": 0,\n  "dataset": }\n')
  with pytest.raises(ValueError) as err:
    evaluate.evaluate_workdir(str(tmp_path), split="test")
  assert str(err.value).startswith(f"{tmp_path / 'config.json'}:2: not valid JSON")
  with pytest.raises(FileNotFoundError, match="no config.json"):
    evaluate.evaluate_workdir(str(tmp_path / "missing"), split="test")
