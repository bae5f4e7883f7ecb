"""Fixtures of the tests of CVSE's official concept files."""

import pathlib

import pytest

from jitr.data import cvse_concepts
from tests.data_folders import data_folder


@pytest.fixture(scope="module")
def cvse_f30k() -> pathlib.Path:
  """The folder of CVSE's real F30K concept files."""
  folder = data_folder("JITR_OFFICIAL_DATA", "official", "cvse_f30k", "official CVSE files")
  return folder / "cvse_f30k"


@pytest.fixture(scope="module")
def official(cvse_f30k) -> cvse_concepts.OfficialConcepts:
  return cvse_concepts.read_official_concepts(cvse_f30k)
