"""The examples in the evaluation docstrings run and print what they claim."""

import doctest
import importlib

import pytest

MODULES = ["recall", "eccv", "ndcg", "semantic", "class_map", "positives"]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module):
  mod = importlib.import_module(f"jitr.evaluation.{module}")
  result = doctest.testmod(
    mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
  )
  assert result.attempted > 0, f"jitr.evaluation.{module} has no docstring example"
  assert result.failed == 0
