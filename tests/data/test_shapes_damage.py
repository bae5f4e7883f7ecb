"""A damaged jitr_shapes build (a record file missing or empty, ``dataset_info.json`` missing,
empty or not JSON) is one ``ValueError`` naming the file, saying to delete the dataset folder
and run again to rebuild it; no TensorFlow or protobuf traceback."""

import os
import shutil

import pytest

from jitr.data.shapes import tfds as shapes_tfds


@pytest.fixture(scope="module")
def built(tmp_path_factory):
  path = tmp_path_factory.mktemp("tfds")
  shapes_tfds.build(str(path), "tiny")
  return path


@pytest.fixture()
def copy(built, tmp_path):
  """A fresh copy of the tiny build and its variant folder ``.../jitr_shapes/tiny/1.0.0``."""
  root = tmp_path / "tfds"
  shutil.copytree(built, root)
  return root, shapes_tfds.builder(str(root), "tiny").data_dir


def _fix(folder) -> str:
  return f"delete {folder} and run again to rebuild it"


@pytest.mark.parametrize(
  ("damage", "problem"), [("empty", "empty (0 bytes)"), ("missing", "missing")]
)
def test_an_empty_or_missing_record_file_is_named_with_the_fix(copy, damage, problem):
  root, folder = copy
  (path,) = shapes_tfds.builder(str(root), "tiny").info.splits["test"].filepaths
  if damage == "empty":
    open(path, "wb").close()
  else:
    os.remove(path)
  shapes_tfds.build(str(root), "tiny")  # a built folder is reused as it is
  with pytest.raises(ValueError) as err:
    shapes_tfds.load_split("test", data_dir=str(root), config="tiny", images=False)
  assert str(err.value) == (
    f"{path}: TFRecord file of jitr_shapes/tiny split 'test' is {problem}; {_fix(folder)}"
  )
  assert shapes_tfds.load_split("val", data_dir=str(root), config="tiny", images=False)


@pytest.mark.parametrize(
  ("content", "detail"),
  [
    (b"", "Failed to load JSON: Expecting value: line 1 column 1 (char 0)."),
    (b"{ not json", "Failed to load JSON: Expecting property name enclosed in double quotes"),
  ],
  ids=["empty", "not-json"],
)
def test_an_unreadable_dataset_info_is_named_with_the_fix(copy, content, detail):
  root, folder = copy
  info = os.path.join(folder, "dataset_info.json")
  with open(info, "wb") as f:
    f.write(content)
  for call in (
    lambda: shapes_tfds.build(str(root), "tiny"),
    lambda: shapes_tfds.load_split("test", data_dir=str(root), config="tiny"),
  ):
    with pytest.raises(ValueError) as err:
      call()
    message = str(err.value)
    assert message.startswith(f"{info}: not a readable TFDS dataset info file ({detail}")
    assert message.endswith(f"); {_fix(folder)}") and "\n" not in message


def test_a_missing_dataset_info_is_named_with_the_fix(copy):
  root, folder = copy
  os.remove(os.path.join(folder, "dataset_info.json"))
  shapes_tfds.build(str(root), "tiny")  # the folder exists: TFDS reuses it
  with pytest.raises(ValueError) as err:
    shapes_tfds.load_split("test", data_dir=str(root), config="tiny")
  assert str(err.value) == (
    f"{folder}/dataset_info.json: missing from a built jitr_shapes/tiny; {_fix(folder)}"
  )
