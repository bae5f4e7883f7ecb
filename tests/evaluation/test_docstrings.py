"""The examples in the evaluation docstrings run and print what they claim.

Each listed module must have at least one example (a module whose examples
were all deleted, or never collected, fails), and every module of the
package that has an example must be listed (none is silently skipped).
"""

import doctest
import importlib
import pkgutil

import pytest

import jitr.evaluation

MODULES = [
  "recall",
  "eccv",
  "ndcg",
  "semantic",
  "class_map",
  "positives",
  "checks",
  "options",
  "folds",
  "relevance_quality",
  "ensemble",
]


def _examples(mod) -> int:
  return sum(len(t.examples) for t in doctest.DocTestFinder().find(mod))


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module):
  mod = importlib.import_module(f"jitr.evaluation.{module}")
  result = doctest.testmod(
    mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
  )
  assert result.attempted > 0, f"jitr.evaluation.{module}: no docstring example was collected"
  assert result.attempted == _examples(mod)
  assert result.failed == 0


def test_every_module_with_an_example_is_listed():
  with_examples = {
    info.name
    for info in pkgutil.iter_modules(jitr.evaluation.__path__)
    if _examples(importlib.import_module(f"jitr.evaluation.{info.name}"))
  }
  assert with_examples == set(MODULES)
