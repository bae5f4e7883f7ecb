"""The house's floors as a test: what each subpackage of jitr may import (docs/architecture.md,
"Import rules"), and no import cycle between any two of its modules.

Every ``import`` and ``from … import`` of every module counts, those inside functions too (a
lazy import climbs a floor as surely as one at the top). The checks run on a source tree
given as a folder, so the same functions are shown to fail on a generated package with an
import that climbs a floor and one with a cycle."""

from __future__ import annotations

import ast
import pathlib

import pytest

JITR = pathlib.Path(__file__).resolve().parents[1] / "jitr"

SHARED = frozenset(
  {
    "fileio",
    "paths",
    "tf_cpu",
    "folder_swap",
    "figures",
    "progress",
    "known_files",
    "config_fields",
    "config_files",
  }
)
"""The top-level modules any floor may import; they import none of the subpackages."""

FLOORS = {
  "losses": set(),
  "evaluation": {"losses"},
  "relevance": {"losses"},
  "models": {"losses"},
  "data": {"relevance"},
  "training": {"losses", "models", "data"},
  "experiment": {"losses", "relevance", "data", "models", "training", "evaluation"},
  "papers": {"losses", "relevance", "data", "models", "training", "evaluation", "experiment"},
  "search": {"losses", "relevance", "data", "models", "training", "evaluation", "experiment"},
  "torch": {"losses"},
  "apps": {
    *("losses", "relevance", "data", "models", "training", "evaluation", "experiment"),
    *("papers", "search"),
  },
}
"""Each subpackage and the subpackages it may import (besides :data:`SHARED`); nothing
imports ``apps``."""


def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
  """``jitr.a.b`` of ``root/a/b.py`` (``root/a/__init__.py``: ``jitr.a``)."""
  parts = path.with_suffix("").relative_to(root.parent).parts
  return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: pathlib.Path) -> list[tuple[int, str]]:
  """``(line, module)`` of every absolute import in ``path``, nested ones included; ``from
  jitr import x`` counts as ``jitr.x``."""
  out = []
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    if isinstance(node, ast.Import):
      out += [(node.lineno, a.name) for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      out.append((node.lineno, node.module))
      out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
  return out


def modules(root: pathlib.Path) -> dict[str, pathlib.Path]:
  """``{module name: file}`` of the package at ``root``."""
  return {module_name(f, root): f for f in sorted(root.rglob("*.py"))}


def floor_of(name: str) -> str:
  """The subpackage (or shared module) ``jitr.<floor>…`` belongs to."""
  return name.split(".")[1]


def climbing_imports(root: pathlib.Path) -> list[str]:
  """``file:line floor -> floor`` for every import a floor is not allowed
  (:data:`FLOORS`, :data:`SHARED`), and every subpackage or top-level module of ``root``
  the table does not place."""
  package = root.name
  bad = []
  for name, path in modules(root).items():
    if name == package:
      continue
    here = floor_of(name)
    if here not in FLOORS and here not in SHARED:
      bad.append(f"{path}: {package}.{here} is on no floor of tests/test_layers.py")
      continue
    allowed = set() if here in SHARED else FLOORS[here]
    for line, target in imported_names(path):
      parts = target.split(".")
      if parts[0] != package or len(parts) < 2 or parts[1] == here:
        continue
      there = parts[1]
      if there in SHARED and here in FLOORS:
        continue
      if there in SHARED and here in SHARED:
        continue
      line_text = f"{path}:{line} {here} -> {there}"
      if there not in allowed and line_text not in bad:  # once per line and floor
        bad.append(line_text)
  return bad


def import_cycles(root: pathlib.Path) -> list[list[str]]:
  """The strongly connected groups of more than one module in ``root``'s import graph (an
  import of a package counts as one of its ``__init__``; a module's import of its own
  parent package does not)."""
  found = modules(root)
  edges = {m: set() for m in found}
  for name, path in found.items():
    for _, target in imported_names(path):
      if target in found and target != name and not name.startswith(target + "."):
        edges[name].add(target)
  index: dict[str, int] = {}
  low: dict[str, int] = {}
  stack: list[str] = []
  on_stack: set[str] = set()
  groups = []

  def visit(v: str) -> None:  # Tarjan's strongly connected components
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in sorted(edges[v]):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      group = []
      while True:
        w = stack.pop()
        on_stack.discard(w)
        group.append(w)
        if w == v:
          break
      if len(group) > 1:
        groups.append(sorted(group))

  for v in sorted(edges):
    if v not in index:
      visit(v)
  return groups


def test_no_import_climbs_a_floor():
  assert climbing_imports(JITR) == []


def test_no_import_cycle():
  assert import_cycles(JITR) == []


def test_every_floor_is_a_package_of_jitr():
  packages = {p.name for p in JITR.iterdir() if (p / "__init__.py").is_file()}
  tops = {p.stem for p in JITR.glob("*.py") if p.stem != "__init__"}
  assert packages <= set(FLOORS) and tops <= SHARED
  assert set(FLOORS) - packages <= {"search"}  # a floor that is planned, not yet built


def _package(tmp_path: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
  root = tmp_path / "jitr"
  for name, text in {"__init__.py": "", **files}.items():
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "__init__.py").touch()
    path.write_text(text)
  return root


@pytest.mark.parametrize(
  ("files", "want"),
  [
    (
      {"losses/a.py": "def f():\n  from jitr.models import b\n"},
      ["losses/a.py:2 losses -> models"],
    ),
    ({"models/a.py": "from jitr import training\n"}, ["models/a.py:1 models -> training"]),
    ({"data/a.py": "import jitr.evaluation.x\n"}, ["data/a.py:1 data -> evaluation"]),
    ({"training/a.py": "from jitr.apps import train\n"}, ["training/a.py:1 training -> apps"]),
    ({"paths.py": "from jitr.data import a\n"}, ["paths.py:1 paths -> data"]),
    (
      {"kitchen/a.py": ""},
      [
        "kitchen/__init__.py: jitr.kitchen is on no floor",
        "kitchen/a.py: jitr.kitchen is on no floor",
      ],
    ),
    ({"models/a.py": "from jitr.losses import b\nfrom jitr import fileio\n"}, []),
  ],
)
def test_the_floor_check_names_an_import_that_climbs(tmp_path, files, want):
  root = _package(tmp_path, files)
  got = [line.removeprefix(f"{root}/") for line in climbing_imports(root)]
  assert [g.split(" of tests/")[0] for g in got] == want


def test_the_cycle_check_finds_a_cycle_through_a_nested_import(tmp_path):
  root = _package(
    tmp_path,
    {
      "data/a.py": "from jitr.data import b\n",
      "data/b.py": "def f():\n  import jitr.data.c\n",
      "data/c.py": "from jitr.data.a import x\n",
      "data/d.py": "from jitr.data import a\n",
    },
  )
  assert import_cycles(root) == [["jitr.data.a", "jitr.data.b", "jitr.data.c"]]
