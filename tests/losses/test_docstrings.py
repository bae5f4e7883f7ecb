"""The examples in the loss docstrings run and print what they claim."""

import doctest
import importlib

import pytest

MODULES = ["vse", "listwise_itr", "dcg", "ranks", "cmal2r", "sam", "lseh", "relevance", "composite"]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module):
  mod = importlib.import_module(f"jitr.losses.{module}")
  result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS, verbose=False)
  assert result.failed == 0
