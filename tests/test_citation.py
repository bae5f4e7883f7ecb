"""What a citable release carries: CITATION.cff (CFF 1.2.0) with pyproject's version and
license, the same version in docs/citing.md and at the top of CHANGELOG.md, the Apache-2.0
LICENSE, and a NOTICE; none of them tells the history of the code."""

import pathlib
import re
import tomllib

import pytest

from tests.test_readme import FORBIDDEN

REPO = pathlib.Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# reference types of the CFF 1.2.0 schema that jitr's references use
REFERENCE_TYPES = {"article", "conference-paper", "generic", "software", "book", "report"}


@pytest.fixture(scope="module")
def citation() -> dict:
  yaml = pytest.importorskip("yaml")
  return yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))


def test_citation_has_the_required_keys(citation):
  assert citation["cff-version"] == "1.2.0"
  assert isinstance(citation["message"], str) and citation["message"].strip()
  assert citation["title"] == "jitr"
  assert citation["type"] == "software"
  assert citation["authors"] == [{"name": "The jitr authors"}]


def test_citation_version_and_license_are_pyproject_s(citation):
  assert str(citation["version"]) == PROJECT["version"]
  assert citation["license"] == PROJECT["license"]


def test_references_have_type_title_and_authors(citation):
  references = citation["references"]
  assert len(references) >= 8  # the four losses' papers and the four networks
  for ref in references:
    assert ref["type"] in REFERENCE_TYPES, ref
    assert isinstance(ref["title"], str) and ref["title"].strip(), ref
    assert ref["authors"] and all(
      {"family-names", "given-names"} <= set(a) or "name" in a for a in ref["authors"]
    ), ref


def test_docs_and_changelog_carry_pyproject_s_version():
  citing = (REPO / "docs" / "citing.md").read_text(encoding="utf-8")
  jitr_entry = re.search(r"@software\{jitr,(.*?)\n\}", citing, flags=re.S)
  assert jitr_entry, "docs/citing.md has no @software{jitr, ...} entry"
  assert re.search(rf"version\s*=\s*\{{{re.escape(PROJECT['version'])}\}}", jitr_entry.group(1))
  changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
  first = re.search(r"^## (\S+)", changelog, flags=re.M)
  assert first and first.group(1) == PROJECT["version"], "CHANGELOG.md's first section"


def test_license_and_notice():
  license_text = (REPO / "LICENSE").read_text(encoding="utf-8")
  assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
  assert "END OF TERMS AND CONDITIONS" in license_text
  notice = (REPO / "NOTICE").read_text(encoding="utf-8")
  assert "Copyright 2026 The jitr authors" in notice


@pytest.mark.parametrize("name", ["CITATION.cff", "CHANGELOG.md", "NOTICE"])
def test_no_history_wording_or_outside_paths(name):
  for number, line in enumerate((REPO / name).read_text(encoding="utf-8").splitlines(), 1):
    for what, pattern in FORBIDDEN.items():
      match = pattern.search(line)
      assert match is None, f"{name}:{number}: {what}: {match.group(0)!r}"
