"""The examples in the loss docstrings run and print what they claim.

Each listed module must have at least one example (a module whose examples
were all deleted, or never collected, fails), and every module of the
package that has an example must be listed (none is silently skipped).
"""

import doctest
import importlib
import pkgutil

import pytest

import jitr.losses

# semantic_margin_triplet, composite and triplet_sndcg have no docstring example yet: add
# them here when they get one.
MODULES = [
  "triplet",
  "smooth_ndcg",
  "dcg",
  "ranks",
  "saturation_window",
  "adaptive_listwise",
  "semantic_hard_negatives",
  "relevance",
  "normalize",
  "calibration",
  "query_rows",
]


def _examples(mod) -> int:
  return sum(len(t.examples) for t in doctest.DocTestFinder().find(mod))


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module):
  mod = importlib.import_module(f"jitr.losses.{module}")
  result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS, verbose=False)
  assert result.attempted > 0, f"jitr.losses.{module}: no docstring example was collected"
  assert result.attempted == _examples(mod)
  assert result.failed == 0


def test_every_module_with_an_example_is_listed():
  with_examples = {
    info.name
    for info in pkgutil.iter_modules(jitr.losses.__path__)
    if _examples(importlib.import_module(f"jitr.losses.{info.name}"))
  }
  assert with_examples == set(MODULES)
