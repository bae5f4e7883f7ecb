"""teacher:WORKDIR relevance on tiny jitr_shapes: a saved (untrained) vse checkpoint is the
teacher; its stored embeddings, the in-batch relevance, the one-line errors, jitr-train."""

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
from jitr.data.shapes import tfds as shapes_tfds
from jitr.data.vocab import Vocab
from jitr.evaluation.report import write_text_atomic
from jitr.experiment import run_config, teachers
from jitr.training.checkpoints import Checkpoints
from jitr.training.graded import make_graded_fn
from jitr.training.teacher import TeacherError
from tests.retrieval_reference import assert_test_metrics_of_best_checkpoint

REPO = pathlib.Path(__file__).resolve().parents[2]


def tiny_config(data_dir) -> ml_collections.ConfigDict:
  config = default.get_config()
  config.shapes_config = "tiny"  # 40 / 10 / 10 images, 5 captions each
  config.data_dir = str(data_dir)
  config.graded = ml_collections.ConfigDict({"relevance": "oracle"})
  config.model.embed_dim = 16
  config.model.word_dim = 8
  config.batch_size = 40
  config.eval_batch_size = 16  # divides neither 40 images nor 200 captions
  config.token_buckets = ()  # one caption width: the train step compiles once
  return config


def make_teacher(workdir: pathlib.Path, config):
  """What jitr-train leaves: config.json, vocab.json, a best checkpoint (the initial state
  of ``config.seed``: no training) and metrics.json. Returns ``(model, state, train split)``."""
  workdir.mkdir(parents=True)
  data = experiment.load_data(config, config.data_dir)
  splits, vocab = data.splits, data.vocab
  vocab.save(str(workdir / "vocab.json"))
  write_text_atomic(str(workdir / "config.json"), config.to_json_best_effort(indent=2))
  steps = pairs.steps_per_epoch(splits["train"], config.batch_size)
  model, state = experiment.initial_state(config, len(vocab), splits["train"], steps)
  save_best(workdir, state, 0.0)
  write_text_atomic(str(workdir / "metrics.json"), '{"full/rsum": 0.0}')
  return model, state, splits["train"]


def save_best(workdir, state, rsum: float) -> None:
  checkpoints = Checkpoints(str(workdir))
  checkpoints.save_best(state, {"rsum": rsum})
  checkpoints.close()


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
  """``(root, teacher workdir, its model, state, train split)``; data in ``root/tfds``."""
  root = tmp_path_factory.mktemp("teacher")
  model, state, train = make_teacher(root / "vse", tiny_config(root / "tfds"))
  return root, root / "vse", model, state, train


def student_config(root, source: str) -> ml_collections.ConfigDict:
  config = tiny_config(root / "tfds")
  config.graded = ml_collections.ConfigDict({"relevance": source})
  return config


def _unit(x):
  x = np.asarray(x, np.float64)
  return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _direct(model, variables, split):
  """The teacher's embeddings of the whole split at once (no batching, no store)."""
  img = model.encode_images(variables, split.images, split.image_mask)
  cap = model.encode_captions(variables, split.tokens, split.lengths)
  return _unit(img), _unit(cap)


def _teacher_dirs(root):
  base = root / "tfds" / "relevance" / "jitr_shapes-tiny-train"
  return sorted(p.name for p in base.glob("teacher-*")) if base.exists() else []


def test_stored_embeddings_round_trip_and_are_reused(shapes):
  root, workdir, model, state, _ = shapes
  variables = state.variables
  splits = experiment.load_data(
    student_config(root, f"teacher:{workdir}"), str(root / "tfds")
  ).splits
  images, captions = splits["train"].teacher[str(workdir)]
  direct_img, direct_cap = _direct(model, variables, splits["train"])
  assert images.shape == (40, 16) and captions.shape == (200, 16)
  assert images.dtype == captions.dtype == np.float32
  np.testing.assert_allclose(images, direct_img, atol=1e-6)
  np.testing.assert_allclose(captions, direct_cap, atol=1e-6)
  base = root / "tfds" / "relevance" / "jitr_shapes-tiny-train"
  # this teacher's store (the module's other tests add stores of other teachers)
  (store,) = [
    base / folder
    for folder in _teacher_dirs(root)
    if json.loads((base / folder / "embeddings.json").read_text())["identity"]["teacher"]
    == str(workdir)
  ]
  header = json.loads((store / "embeddings.json").read_text())
  assert header["identity"]["step"] == 0 and header["identity"]["checkpoint"] == "best"
  assert header["arrays"] == {"images": {"shape": [40, 16], "dtype": "float32"},
                              "captions": {"shape": [200, 16], "dtype": "float32"}}  # fmt: skip
  mtime = (store / "embeddings.npz").stat().st_mtime_ns
  again = experiment.load_data(
    student_config(root, f"teacher:{workdir}"), str(root / "tfds")
  ).splits
  assert (store / "embeddings.npz").stat().st_mtime_ns == mtime  # reused, not rewritten
  np.testing.assert_array_equal(again["train"].teacher[str(workdir)][0], images)
  # Damaged bytes are detected (sha256) and the embeddings recomputed.
  (store / "embeddings.npz").write_bytes(b"not an npz")
  fixed = experiment.load_data(
    student_config(root, f"teacher:{workdir}"), str(root / "tfds")
  ).splits
  np.testing.assert_array_equal(fixed["train"].teacher[str(workdir)][1], captions)


def test_a_newer_checkpoint_is_recomputed(shapes, tmp_path):
  root, teacher, model, state, train = shapes
  workdir = tmp_path / "vse"
  shutil.copytree(teacher, workdir)
  config = student_config(root, f"teacher:{workdir}")
  experiment.load_data(config, str(root / "tfds"))
  before = set(_teacher_dirs(root))
  better = state.replace(step=state.step + 5, params=jax.tree.map(lambda p: -p, state.params))
  save_best(workdir, better, 1.0)  # a better checkpoint at step 5
  splits = experiment.load_data(config, str(root / "tfds")).splits
  (added,) = set(_teacher_dirs(root)) - before
  header = json.loads((root / "tfds/relevance/jitr_shapes-tiny-train" / added / "embeddings.json")
                      .read_text())  # fmt: skip
  assert header["identity"]["step"] == 5
  images, captions = splits["train"].teacher[str(workdir)]
  direct_img, direct_cap = _direct(model, better.variables, train)
  np.testing.assert_allclose(images, direct_img, atol=1e-6)
  np.testing.assert_allclose(captions, direct_cap, atol=1e-6)


def test_in_batch_relevance_is_one_plus_cosine_over_two_with_positives_one(shapes):
  root, workdir, model, state, _ = shapes
  variables = state.variables
  source = f"teacher:{workdir}"
  data = experiment.load_data(student_config(root, source), str(root / "tfds"))
  train, aggregates = data.splits["train"], data.aggregates
  captions = np.array([0, 1, 7, 30, 31, 120, 199, 64])
  batch = pairs.make_batch(train, captions)
  positives = batch["image_ids"][:, None] == batch["image_ids"][None, :]
  out = make_graded_fn({"relevance": source}, aggregates=aggregates)(batch, batch, positives)
  img, cap = _direct(model, variables, train)
  owner = train.caption_image[captions]
  expected = np.where(positives, 1.0, (1.0 + img[owner] @ cap[captions].T) / 2)
  np.testing.assert_allclose(out["relevance"], expected, atol=1e-6)
  assert np.all((np.asarray(out["relevance"]) >= 0) & (np.asarray(out["relevance"]) <= 1))
  assert positives[0, 1] and not positives[0, 2]  # captions 0 and 1 share image 0


def _error(config, root) -> str:
  with pytest.raises(TeacherError) as err:
    experiment.load_data(config, str(root / "tfds"))
  assert "\n" not in str(err.value)
  return str(err.value)


def test_bad_teachers_are_one_line_errors(shapes, tmp_path):
  root, workdir, _, _, _ = shapes
  missing = tmp_path / "nothing"
  assert _error(student_config(root, f"teacher:{missing}"), root) == (
    f"teacher:{missing}: no such workdir ({missing})"
  )
  empty = tmp_path / "empty"
  empty.mkdir()
  assert _error(student_config(root, f"teacher:{empty}"), root) == (
    f"teacher:{empty}: no config.json in {empty}; expected a jitr-train workdir"
  )
  untrained = tmp_path / "untrained"  # config and vocabulary, no checkpoint
  untrained.mkdir()
  for name in ("config.json", "vocab.json"):
    shutil.copy(workdir / name, untrained / name)
  assert _error(student_config(root, f"hmean:oracle|teacher:{untrained}"), root) == (
    f"teacher:{untrained}: no checkpoint in {untrained / 'checkpoints'} "
    "(expected best/ or latest/ of jitr-train)"
  )
  interrupted = tmp_path / "interrupted"  # checkpoints, but stopped before metrics.json
  shutil.copytree(workdir, interrupted)
  (interrupted / "metrics.json").unlink()
  assert _error(student_config(root, f"teacher:{interrupted}"), root) == (
    f"teacher:{interrupted}: its training did not finish (no metrics.json, which jitr-train "
    "writes last); run jitr-train on that workdir again to finish it"
  )
  damaged = tmp_path / "damaged_config"  # config.json with a field of the wrong type
  shutil.copytree(workdir, damaged)
  saved = json.loads((damaged / "config.json").read_text())
  saved["model"]["embed_dim"] = "16"
  (damaged / "config.json").write_text(json.dumps(saved))
  assert _error(student_config(root, f"teacher:{damaged}"), root) == (
    f"teacher:{damaged}: {damaged / 'config.json'}: config.model.embed_dim: expected a whole "
    "number, got '16' (str)"
  )
  sgr = tmp_path / "sgr"
  sgr.mkdir()
  shutil.copy(workdir / "vocab.json", sgr / "vocab.json")
  sgr_config = tiny_config(root / "tfds")
  sgr_config.model = ml_collections.ConfigDict({"name": "sgr", "embed_dim": 16})
  write_text_atomic(str(sgr / "config.json"), sgr_config.to_json_best_effort())
  assert _error(student_config(root, f"teacher:{sgr}"), root) == (
    f"teacher needs a dual encoder (vse, vsrn, vseinf), {sgr} trains sgr"
  )
  other_data = tmp_path / "other_data"
  other_data.mkdir()
  shutil.copy(workdir / "vocab.json", other_data / "vocab.json")
  other = tiny_config(root / "tfds")
  other.shapes_config = "default"
  write_text_atomic(str(other_data / "config.json"), other.to_json_best_effort())
  assert _error(student_config(root, f"teacher:{other_data}"), root) == (
    f"teacher:{other_data} was trained on jitr_shapes/default, this run trains on "
    "jitr_shapes/tiny; a teacher must be trained on the same data"
  )
  other_vocab = tmp_path / "other_vocab"
  shutil.copytree(workdir, other_vocab)
  words = list(Vocab.load(str(workdir / "vocab.json")).words)
  words[4], words[5] = words[5], words[4]
  Vocab(words).save(str(other_vocab / "vocab.json"))
  assert _error(student_config(root, f"teacher:{other_vocab}"), root) == (
    f"teacher:{other_vocab} was trained with another vocabulary ({len(words)} words, this run "
    f"has {len(words)}; word 4 is {words[4]!r} there, {words[5]!r} here): "
    "trained on other captions"
  )


def test_teacher_workdirs_are_made_absolute(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  graded = {"relevance": "hmean:vectors:sentence|teacher:runs/vse", "other": "teacher:/abs/x"}
  assert teachers.teacher_workdirs(graded) == ["runs/vse", "/abs/x"]
  assert run_config.with_absolute_teachers(graded) == {
    "relevance": f"hmean:vectors:sentence|teacher:{tmp_path / 'runs' / 'vse'}",
    "other": "teacher:/abs/x",
  }


def test_jitr_train_refuses_a_bad_teacher_before_writing(shapes, tmp_path):
  root, _, _, _, _ = shapes
  config = student_config(root, f"hmean:oracle|teacher:{tmp_path / 'nothing'}")
  with pytest.raises(TeacherError, match="no such workdir"):
    experiment.train_and_evaluate(config, str(tmp_path / "run"))
  assert not (tmp_path / "run").exists()


def _jitr_train(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
  exe = shutil.which("jitr-train") or str(pathlib.Path(sys.executable).with_name("jitr-train"))
  env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's jitr
  return subprocess.run([exe, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_jitr_train_with_teacher_relevance_through_the_console_script(shapes, tmp_path):
  """The documented command (docs/relevance.md): one epoch (5 steps) of triplet + Smooth-NDCG on
  hmean:vectors:lsa|coverage:tokens|teacher:<workdir> (the teacher's and token coverage's
  documented commands in one run), from another directory."""
  root, workdir, _, _, _ = shapes
  common = [
    f"--config={REPO / 'configs' / 'default.py'}",
    "--config.shapes_config=tiny",
    f"--config.data_dir={root / 'tfds'}",
    "--config.num_epochs=1",
    "--config.loss.triplet.from_epoch=0",  # one epoch: the hardest-negative term from step 0
    "--config.batch_size=40",
    "--config.model.embed_dim=16",
    "--config.model.word_dim=8",
    "--config.estimators.lsa.k=8",
    "--config.log_every_steps=5",
    "--config.token_buckets=()",  # one caption width: the train step compiles once
  ]
  done = _jitr_train(
    *common,
    f"--workdir={tmp_path / 'student'}",
    f"--config.graded.relevance=hmean:vectors:lsa|coverage:tokens|teacher:{workdir}",
    "--config.estimators.tokens.codebook_size=32",
    "--config.calibration.relevance=minmax,power:8",  # token coverage's documented form
    cwd=tmp_path,
  )
  assert done.returncode == 0, done.stderr[-3000:]
  metrics = json.loads((tmp_path / "student" / "metrics.json").read_text())
  # = the best checkpoint (step 5: one epoch of 200 captions in batches of 40) recomputed
  exact = shapes_tfds.split_relevance("test", data_dir=str(root / "tfds"), config="tiny")
  assert_test_metrics_of_best_checkpoint(metrics, tmp_path / "student", steps=(5,), exact=exact)
  saved = json.loads((tmp_path / "student" / "config.json").read_text())
  assert saved["graded"]["relevance"] == f"hmean:vectors:lsa|coverage:tokens|teacher:{workdir}"
  assert saved["calibration"]["relevance"] == "minmax,power:8"
