"""The README and the docs pages: the Python examples run as written, the README stays a
short page, every relative link resolves, and no page carries history wording or a path
outside the repository."""

import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
# Pages whose ```python blocks are complete programs (docs/torch.md holds fragments).
RUNNABLE = ["README.md", "docs/losses.md", "docs/models.md", "docs/evaluation.md"]
MAX_README_LINES = 300

# Wording that tells the history of the code instead of what it does, and paths outside
# the repository; word boundaries keep ordinary words ("tissue 3", "earliest") out.
FORBIDDEN = {
  "a path outside the repository": re.compile(r"\.\./shared"),
  "history wording": re.compile(
    r"\bbefore these changes\b|\bnot yet re-measured\b|\ban earlier\b|\bissue \d|\bsessions?\b",
    re.IGNORECASE,
  ),
}
# [text](target): the target up to the first space or ")", without a "#anchor".
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _rel(page: pathlib.Path) -> str:
  return page.relative_to(REPO).as_posix()


def _python_blocks(text: str) -> list[str]:
  return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_python_example_runs():
  blocks = _python_blocks(README.read_text(encoding="utf-8"))
  assert blocks, "README has no python example"
  for block in blocks:
    exec(compile(block, "README.md", "exec"), {})


@pytest.mark.parametrize("name", [n for n in RUNNABLE if n != "README.md"])
def test_docs_python_examples_run(name):
  blocks = _python_blocks((REPO / name).read_text(encoding="utf-8"))
  assert blocks, f"{name} has no python example"
  for block in blocks:
    exec(compile(block, name, "exec"), {})


def test_readme_is_short():
  lines = README.read_text(encoding="utf-8").count("\n")
  assert lines <= MAX_README_LINES, (
    f"README.md has {lines} lines (at most {MAX_README_LINES}): move details into docs/"
  )


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_no_history_wording_or_outside_paths(page):
  for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
    for what, pattern in FORBIDDEN.items():
      match = pattern.search(line)
      assert match is None, f"{_rel(page)}:{number}: {what}: {match.group(0)!r}"


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_relative_links_resolve(page):
  text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
  for target in LINK.findall(text):
    if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
      continue  # a URL (https:, mailto:) or an anchor of the same page
    path = (page.parent / target.split("#", 1)[0]).resolve()
    assert path.is_file(), f"{_rel(page)}: the link ({target}) points at no file"
    assert REPO in path.parents, f"{_rel(page)}: the link ({target}) leaves the repository"
