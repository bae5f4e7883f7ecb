"""docs/faults.md: every row of its tables names, in its "proved by" column, tests that
exist in this suite (read from the sources, nothing of jitr is imported)."""

import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[1]
FAULTS = REPO / "docs" / "faults.md"
HEADER = ["fault", "what happens", "proved by"]


def _cells(line: str) -> list[str]:
  return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _rows() -> list[tuple[str, str]]:
  """``(fault, proved by)`` of every body row of every table of docs/faults.md."""
  rows, in_table = [], False
  for line in FAULTS.read_text(encoding="utf-8").splitlines():
    if not line.startswith("|"):
      in_table = False
      continue
    cells = _cells(line)
    if cells[:2] == HEADER[:2]:
      assert cells == HEADER, f"docs/faults.md: table header {cells}, expected {HEADER}"
      in_table = True
    elif in_table and not set(line) <= set("|-: "):
      rows.append((cells[0], cells[-1]))
  return rows


def _defined_tests() -> set[str]:
  pattern = re.compile(r"^(?:async )?def (test_\w+)", re.MULTILINE)
  return {
    name
    for path in (REPO / "tests").rglob("*.py")
    for name in pattern.findall(path.read_text(encoding="utf-8"))
  }


def test_the_fault_tables_have_a_proved_by_column_and_enough_rows():
  assert len(_rows()) >= 30


def test_every_fault_names_tests_that_exist():
  defined = _defined_tests()
  unknown, unproved = [], []
  for fault, proved_by in _rows():
    names = re.findall(r"`([^`]+)`", proved_by)
    if not re.fullmatch(r"`\w+`(, `\w+`)*", proved_by):
      unproved.append(f"{fault[:60]}: {proved_by!r}")
    unknown += [f"{name} (row: {fault[:60]})" for name in names if name not in defined]
  assert not unproved, f"rows whose 'proved by' is not `test_a`, `test_b`, ...: {unproved}"
  assert not unknown, f"names in docs/faults.md that are no test of tests/: {unknown}"
