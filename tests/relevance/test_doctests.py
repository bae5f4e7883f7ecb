"""The examples in the jitr.relevance docstrings run, and there are examples to run."""

import doctest
import importlib
import pkgutil

import pytest

import jitr.relevance

MODULES = sorted(
  m.name.removeprefix("jitr.relevance.")
  for m in pkgutil.walk_packages(jitr.relevance.__path__, "jitr.relevance.")
)
# modules whose docstrings carry examples: each must have some, and they must pass
WITH_EXAMPLES = [
  "cider",
  "cosine",
  "estimator",
  "external_scores",
  "isotonic",
  "pair_scores",
  "precompute",
  "records.shards",
  "registry",
  "scores_file",
  "sentence",
  "spherical_kmeans",
  "token_coverage",
  "tokenize",
]


def _examples(module) -> int:
  return sum(len(t.examples) for t in doctest.DocTestFinder().find(module))


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples_pass(name):
  module = importlib.import_module(f"jitr.relevance.{name}")
  assert _examples(module) > 0, f"jitr.relevance.{name} has no docstring examples"
  result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
  assert result.attempted > 0 and result.failed == 0, result


def test_every_module_with_examples_is_listed():
  found = [n for n in MODULES if _examples(importlib.import_module(f"jitr.relevance.{n}")) > 0]
  assert found == WITH_EXAMPLES
