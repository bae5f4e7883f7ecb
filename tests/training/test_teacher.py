"""jitr.training.teacher: a dual encoder's split embeddings (vse and vsrn), and its checks."""

import jax
import numpy as np
import pytest

from jitr.data import pairs
from jitr.data.vocab import Vocab
from jitr.training.teacher import (
  TeacherError,
  check_teacher_config,
  check_teacher_vocab,
  saved_checkpoint,
  split_embeddings,
)
from tests.training import model_zoo


def _split(batch, n_images=4, captions_per_image=2):
  first = np.arange(0, n_images * captions_per_image, captions_per_image)
  return pairs.RetrievalSplit(
    images=batch["images"][first],
    image_mask=batch["image_mask"][first],
    tokens=batch["tokens"],
    lengths=batch["lengths"],
    caption_image=batch["image_ids"],
  )


def test_split_embeddings_are_the_unit_rows_of_the_encoders():
  """A VSRN teacher (BatchNorm statistics in its variables, a tuple from its image tower;
  the vse teacher is tests/experiment/test_teachers.py's) encoded in batches of 3
  (4 images, 8 captions: padded last batches), rows normalised, equal to encoding
  everything at once."""
  model = model_zoo.model("vsrn", caption_weight=0.0)  # no captioner: retrieval towers only
  batch = model_zoo.region_batch()
  variables = model_zoo.perturbed(jax.jit(model.init)(jax.random.key(0), batch))
  split = _split(batch)
  images, captions = split_embeddings(model, variables, split, batch_size=3)
  img = jax.jit(model.encode_images)(variables, split.images, split.image_mask)
  cap = jax.jit(model.encode_captions)(variables, split.tokens, split.lengths)
  img, cap = np.asarray(img, np.float64), np.asarray(cap, np.float64)
  assert images.dtype == captions.dtype == np.float32
  np.testing.assert_allclose(images, img / np.linalg.norm(img, axis=1, keepdims=True), atol=1e-5)
  np.testing.assert_allclose(captions, cap / np.linalg.norm(cap, axis=1, keepdims=True), atol=1e-5)
  np.testing.assert_allclose(np.linalg.norm(images, axis=1), 1.0, atol=1e-6)


DATA = "jitr_shapes/tiny"


@pytest.mark.parametrize(
  ("name", "ok"), [("vse", True), ("vsrn", True), ("sgr", False), ("saf", False)]
)
def test_only_dual_encoders_teach(name, ok):
  if ok:
    check_teacher_config("w", DATA, {"name": name}, DATA, 20)
  else:
    with pytest.raises(TeacherError) as err:
      check_teacher_config("w", DATA, {"name": name}, DATA, 20)
    assert str(err.value) == f"teacher needs a dual encoder (vse, vsrn, vseinf), w trains {name}"


def test_teacher_of_other_data_or_model_name_is_refused():
  with pytest.raises(TeacherError, match="teacher:w was trained on f30k_precomp, this run"):
    check_teacher_config("w", "f30k_precomp", {}, DATA, 20)
  with pytest.raises(TeacherError, match="config.model.name is 'blip'"):
    check_teacher_config("w", DATA, {"name": "blip"}, DATA, 20)


def test_vocabularies_must_be_equal():
  base = ("<pad>", "<start>", "<end>", "<unk>")
  check_teacher_vocab("w", Vocab(base + ("a", "b")), Vocab(base + ("a", "b")))
  with pytest.raises(TeacherError) as err:
    check_teacher_vocab("w", Vocab(base + ("a",)), Vocab(base + ("a", "b")))
  assert str(err.value) == (
    "teacher:w was trained with another vocabulary (5 words, this run has 6; word 5 is "
    "(none) there, 'b' here): trained on other captions"
  )


def test_best_checkpoint_first_then_latest(tmp_path):
  with pytest.raises(TeacherError, match="no checkpoint in"):
    saved_checkpoint(str(tmp_path))
  (tmp_path / "checkpoints" / "latest" / "7").mkdir(parents=True)
  (tmp_path / "checkpoints" / "latest" / "12").mkdir()
  (tmp_path / "checkpoints" / "best").mkdir()
  assert saved_checkpoint(str(tmp_path)) == ("latest", 12)
  (tmp_path / "checkpoints" / "best" / "9").mkdir()
  assert saved_checkpoint(str(tmp_path)) == ("best", 9)
