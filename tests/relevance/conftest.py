"""Fixtures of the relevance tests: the Flickr8k text package, Java, small caption files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.data_folders import data_folder


@pytest.fixture(scope="session")
def flickr8k() -> Path:
  """The Flickr8k text package: ``$JITR_FLICKR8K`` (see tests/data_folders.py)."""
  return data_folder("JITR_FLICKR8K", "flickr8k", "Flickr8k.token.txt", "Flickr8k text package")


@pytest.fixture(scope="session")
def flickr8k_captions(flickr8k):
  from jitr.relevance.captions_io import read_flickr8k_tokens

  return read_flickr8k_tokens(str(flickr8k / "Flickr8k.token.txt"))


@pytest.fixture(scope="session")
def java() -> str:
  exe = shutil.which("java")
  if exe is None:
    pytest.skip("java not found: pycocoevalcap's PTBTokenizer (the reference) needs it")
  try:
    import pycocoevalcap  # noqa: F401
  except ImportError:
    pytest.skip("pycocoevalcap (dev extra) not installed")
  return exe


SMALL_CAPTIONS = [
  # image 0
  "A brown dog runs across the green grass .",
  "A dog is running on the grass .",
  "The brown dog sprints through a field .",
  "A dog running outside .",
  "Brown dog in a grassy field .",
  # image 1
  "A man rides a red bicycle down the street .",
  "A cyclist on a city street .",
  "A man on a bike in traffic .",
  "Person riding a bicycle on a road .",
  "A man cycling past parked cars .",
  # image 2
  "Two children play in the sand at the beach .",
  "Kids building a sandcastle by the ocean .",
  "Two kids on a sandy beach .",
  "Children playing near the water .",
  "A boy and a girl digging in the sand .",
  # image 3
  "A black dog catches a frisbee in the park .",
  "A dog jumps to catch a flying disc .",
  "The black dog leaps for the frisbee .",
  "A dog playing frisbee on the grass .",
  "Dog in mid-air catching a frisbee .",
  # image 4
  "A woman in a red coat walks in the snow .",
  "A person walking through a snowy street .",
  "Woman wearing a red jacket in winter .",
  "A lady walks down a snow covered road .",
  "Someone in red walking in snowfall .",
]


@pytest.fixture()
def small_captions() -> list[str]:
  return list(SMALL_CAPTIONS)


@pytest.fixture()
def small_caps_file(tmp_path) -> Path:
  """A precomp ``*_caps.txt`` with 5 images x 5 captions."""
  path = tmp_path / "test_caps.txt"
  path.write_text("\n".join(SMALL_CAPTIONS) + "\n", encoding="utf-8")
  return path
