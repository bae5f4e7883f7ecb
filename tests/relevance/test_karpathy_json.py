"""Karpathy's split files: images, splits and captions read, every fault one line."""

import json

import pytest

from jitr.relevance.captions_io import CaptionFileError, read_captions
from jitr.relevance.karpathy_json import CaptionFileError as SplitFileError
from jitr.relevance.karpathy_json import karpathy_captions, read_karpathy
from tests.data.karpathy_folder import write_karpathy_folder


def _write(tmp_path, images) -> str:
  path = tmp_path / "dataset_x.json"
  path.write_text(json.dumps({"images": images, "dataset": "x"}))
  return str(path)


def _image(k, split="train", captions=("a dog", "a cat"), **more):
  sentences = [{"raw": c, "tokens": c.split()} for c in captions]
  return {"filename": f"{k}.jpg", "imgid": k, "split": split, "sentences": sentences, **more}


def test_a_generated_file_reads_in_file_order_with_its_splits(tmp_path):
  path, _ = write_karpathy_folder(str(tmp_path))
  images = read_karpathy(path)
  assert [i.file for i in images[:3]] == ["0000.jpg", "0001.jpg", "0002.jpg"]
  assert [sum(i.split == s for i in images) for s in ("train", "val", "test")] == [24, 8, 8]
  assert images[0].captions[0] == "a red square"
  assert len(images[5].captions) == 6


def test_captions_keep_the_first_of_each_image_and_number_as_a_precomp_file(tmp_path):
  path, _ = write_karpathy_folder(str(tmp_path))
  texts = karpathy_captions(path, ("train",), 5)
  assert len(texts) == 24 * 5
  assert "an extra caption" not in " ".join(texts)  # image 5's sixth caption is cut
  captions = read_captions(path)  # .json: the Karpathy format, train (+ restval) images
  assert captions.captions == tuple(texts)
  assert captions.image_ids[:2] == ("0", "1") and captions.caption_ids[5] == "5"
  test = read_captions(path, "karpathy", 5, ("test",))
  assert test.num_images == 8 and test.captions[0] == "a red square"  # image 32


def test_a_coco_filepath_is_the_images_sub_folder(tmp_path):
  path = _write(tmp_path, [_image(1, filepath="val2014")])
  assert read_karpathy(path)[0].file == "val2014/1.jpg"


@pytest.mark.parametrize(
  "images, message",
  [
    ([{"filename": "a.jpg", "sentences": [{"raw": "x"}]}], "images[0] (a.jpg): no 'split'"),
    ([_image(1), _image(1)], "images[1] names 1.jpg, as images[0] does"),
    (
      [_image(1), {**_image(2), "imgid": 1}],
      "images[1] (2.jpg) has imgid 1, as images[0] does",
    ),
    ([_image(1, captions=())], "images[0] (1.jpg): expected 'sentences', a non-empty list"),
    ([_image(1, captions=(" ",))], "images[0] (1.jpg): sentences[0] has no non-empty 'raw'"),
    (["1.jpg"], "images[0]: expected an object, got string"),
  ],
)
def test_a_fault_is_one_line_naming_the_file_and_the_image(tmp_path, images, message):
  path = _write(tmp_path, images)
  with pytest.raises(SplitFileError) as err:
    read_karpathy(path)
  assert str(err.value).startswith(f"{path}: {message}")
  assert "\n" not in str(err.value)


def test_a_file_that_is_not_a_split_file_and_a_missing_split_are_one_line(tmp_path):
  path = tmp_path / "x.json"
  path.write_text("[1, 2]")
  with pytest.raises(CaptionFileError, match=r"expected \{'images': \[\.\.\.\]\}"):
    read_captions(str(path))
  path = _write(tmp_path, [_image(1)])
  with pytest.raises(CaptionFileError, match="no image of split test .the file has train."):
    read_captions(path, "karpathy", 2, ("test",))
  with pytest.raises(CaptionFileError, match="1.jpg has 2 captions, expected at least 5"):
    read_captions(path, "karpathy", 5)
