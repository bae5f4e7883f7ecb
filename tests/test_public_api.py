"""The stated public API: every package's ``__all__`` resolves, and docs/api.md lists exactly it."""

import importlib
import pathlib
import re

import pytest

API_PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "api.md"
PACKAGES = (
  "jitr.losses",
  "jitr.relevance",
  "jitr.data",
  "jitr.models",
  "jitr.training",
  "jitr.evaluation",
  "jitr.experiment",
  "jitr.papers",
  "jitr.torch",
  "jitr.paths",
)


def documented_names(page: str) -> dict[str, list[str]]:
  """``{module: [names]}`` of the autosummary blocks of the API page, in page order."""
  out: dict[str, list[str]] = {}
  module = None
  in_summary = False
  for line in page.splitlines():
    if m := re.match(r"\.\. currentmodule:: (\S+)", line):
      module, in_summary = m.group(1), False
    elif line.startswith(".. autosummary::"):
      in_summary = True
      out.setdefault(module, [])
    elif line.startswith("```"):
      in_summary = False
    elif in_summary and re.match(r"^   [A-Za-z_]\w*$", line):
      out[module].append(line.strip())
  return out


def test_the_page_parser_reads_an_autosummary_block():
  page = (
    "```{eval-rst}\n.. currentmodule:: a.b\n\n.. autosummary::\n   :toctree: g\n\n   f\n   G\n```\n"
  )
  assert documented_names(page) == {"a.b": ["f", "G"]}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves_once(package):
  module = importlib.import_module(package)
  assert len(set(module.__all__)) == len(module.__all__), "a name is exported twice"
  missing = [name for name in module.__all__ if not hasattr(module, name)]
  assert not missing, f"{package}.__all__ names what it does not define: {missing}"


def test_the_api_page_lists_exactly_each_package_all():
  documented = documented_names(API_PAGE.read_text(encoding="utf-8"))
  assert list(documented) == list(PACKAGES)
  for package in PACKAGES:
    exported = importlib.import_module(package).__all__
    assert sorted(documented[package]) == sorted(exported), package
