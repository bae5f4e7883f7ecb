"""The jitr_shapes TFDS builder on the tiny config (40 / 10 / 10 images)."""

import subprocess
import sys

import numpy as np
import pytest

from jitr.data.shapes import captions as shapes_captions
from jitr.data.shapes import example as shapes_example
from jitr.data.shapes import relevance as shapes_relevance
from jitr.data.shapes import scene as shapes_scene
from jitr.data.shapes import tfds as shapes_tfds


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
  path = tmp_path_factory.mktemp("tfds")
  shapes_tfds.build(str(path), "tiny")
  return str(path)


def test_builder_metadata_and_split_sizes(data_dir):
  b = shapes_tfds.builder(data_dir, "tiny")
  assert b.name == "jitr_shapes" and str(b.version) == "1.0.0"
  assert {k: v.num_examples for k, v in b.info.splits.items()} == {
    "train": 40,
    "val": 10,
    "test": 10,
  }
  assert shapes_tfds.DEFAULT.split_sizes() == {"train": 10_000, "val": 1_000, "test": 1_000}
  feats = b.info.features
  assert feats["image"].shape == (64, 64, 3)
  assert feats["regions"].shape == (3, 128)
  assert feats["caption_facts"].shape == (5, shapes_captions.FACT_FIELDS)


def test_custom_config_sizes_and_region_layout(tmp_path):
  cfg = shapes_tfds.ShapesConfig(
    name="custom", num_train=4, num_val=3, num_test=2, seed=5, region_dim=16, max_regions=4
  )
  b = shapes_tfds.build(str(tmp_path), cfg)
  assert {k: v.num_examples for k, v in b.info.splits.items()} == {"train": 4, "val": 3, "test": 2}
  d = shapes_tfds.load_split("val", data_dir=str(tmp_path), config=cfg)
  fresh = shapes_example.make_split(5, "val", 3, region_dim=16, max_regions=4)
  assert d["regions"].shape == (3, 4, 16)
  np.testing.assert_array_equal(d["region_mask"], fresh["region_mask"])
  np.testing.assert_array_equal(d["region_mask"].sum(1), (d["scene"][..., 0] >= 0).sum(1))
  np.testing.assert_array_equal(d["image"], fresh["image"])


def test_stored_examples_equal_the_pure_generator(data_dir):
  stored = shapes_tfds.load_split("val", data_dir=data_dir, config="tiny")
  fresh = shapes_example.make_split(shapes_tfds.TINY.seed, "val", 10)
  np.testing.assert_array_equal(stored["image_id"], np.arange(10))
  for key in ("image", "regions", "region_mask", "caption_facts", "scene", "scene_seed"):
    np.testing.assert_array_equal(stored[key], fresh[key], err_msg=key)
  assert stored["captions"] == fresh["captions"] and len(stored["captions"]) == 50
  assert stored["facts_json"] == fresh["facts_json"]
  assert stored["image"].dtype == np.uint8 and stored["regions"].shape == (10, 3, 128)


def test_rebuild_in_another_dir_is_identical(data_dir, tmp_path):
  shapes_tfds.build(str(tmp_path), "tiny")
  a = shapes_tfds.load_split("test", data_dir=data_dir, config="tiny")
  b = shapes_tfds.load_split("test", data_dir=str(tmp_path), config="tiny")
  for key in a:
    if isinstance(a[key], list):
      assert a[key] == b[key]
    else:
      np.testing.assert_array_equal(a[key], b[key], err_msg=key)
  # the splits differ from each other
  c = shapes_tfds.load_split("val", data_dir=data_dir, config="tiny")
  assert not np.array_equal(a["scene"], c["scene"])


def test_split_relevance_matrix(data_dir):
  rel = shapes_tfds.split_relevance("test", data_dir=data_dir, config="tiny")
  assert rel.shape == (10, 50) and rel.dtype == np.float32
  np.testing.assert_array_equal(rel[np.repeat(np.arange(10), 5), np.arange(50)], 1.0)
  data = shapes_tfds.load_split("test", data_dir=data_dir, config="tiny", images=False)
  assert "image" not in data
  scene3 = shapes_scene.Scene.from_array(data["scene"][3])
  facts = shapes_captions.CaptionFacts.from_array(data["caption_facts"][7, 2])  # caption 5*7+2
  assert rel[3, 37] == pytest.approx(shapes_relevance.relevance(scene3, facts), abs=1e-6)
  assert 0 < rel.mean() < 1 and len(np.unique(rel)) > 5  # graded


def test_missing_build_gives_clear_error(tmp_path):
  with pytest.raises(FileNotFoundError, match="jitr_shapes/tiny is not built"):
    shapes_tfds.load_split("val", data_dir=str(tmp_path), config="tiny")
  with pytest.raises(ValueError, match="unknown split 'dev'"):
    shapes_example.make_example(0, "dev", 0)


def test_import_does_not_load_tensorflow():
  code = "import sys; import jitr.data.shapes.tfds; print('tensorflow' in sys.modules)"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "False", out.stderr


def test_build_says_what_it_generates_without_unknown_sizes(tmp_path, capsys, caplog):
  caplog.set_level("INFO")
  cfg = shapes_tfds.ShapesConfig(name="one", num_train=1, num_val=1, num_test=1)
  shapes_tfds.build(str(tmp_path), cfg)
  printed = capsys.readouterr().out + caplog.text
  assert "Unknown size" not in printed
  assert "Generating jitr_shapes/one (1 / 1 / 1 images)" in caplog.text


def test_corrupt_split_file_is_named_with_the_fix(data_dir, tmp_path):
  """Flipped bytes in one record file (same size): one error naming that file and how to
  rebuild, no DataLossError traceback from TensorFlow."""
  import shutil

  copy = tmp_path / "tfds"
  shutil.copytree(data_dir, copy)
  b = shapes_tfds.builder(str(copy), "tiny")
  path = str(b.info.splits["test"].filepaths[0])
  raw = bytearray(open(path, "rb").read())
  raw[len(raw) // 2] ^= 0xFF
  open(path, "wb").write(bytes(raw))
  assert shapes_tfds.corrupt_files([str(p) for p in b.info.splits["train"].filepaths]) == []
  with pytest.raises(ValueError) as err:
    shapes_tfds.load_split("test", data_dir=str(copy), config="tiny", images=False)
  message = str(err.value)
  assert message.startswith(f"{path}: corrupt TFRecord file of jitr_shapes/tiny split 'test'")
  assert message.endswith(f"delete {b.data_dir} and run again to rebuild it")
  assert shapes_tfds.load_split("val", data_dir=str(copy), config="tiny", images=False)
