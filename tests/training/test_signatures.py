"""jitr.training's functions take few arguments: related ones travel as one NamedTuple or
dataclass (``EpochPlan``, ``LoopHooks``, ``DeviceQueries``)."""

import ast
import pathlib

import jitr.training

MAX_PARAMETERS = 8


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
  """Positional (incl. positional-only) and keyword-only parameters; ``self`` / ``cls`` of
  a method left out."""
  args = fn.args
  names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
  return names[1:] if names[:1] in (["self"], ["cls"]) else names


def _too_long(source: str) -> list[str]:
  tree = ast.parse(source)
  return [
    f"{fn.name} (line {fn.lineno}): {len(_parameters(fn))} parameters"
    for fn in ast.walk(tree)
    if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
    and len(_parameters(fn)) > MAX_PARAMETERS
  ]


def test_no_function_in_jitr_training_takes_more_than_eight_parameters():
  root = pathlib.Path(jitr.training.__file__).parent
  found = {
    path.name: bad
    for path in sorted(root.rglob("*.py"))
    if (bad := _too_long(path.read_text(encoding="utf-8")))
  }
  assert not found, found


def test_the_scan_counts_keyword_only_parameters_and_skips_self():
  source = (
    "def f(a, b, c, d, e, *, f, g, h, i): pass\n"
    "class C:\n"
    "  def m(self, a, b, c, d, e, f, g, h): pass\n"
  )
  assert _too_long(source) == ["f (line 1): 9 parameters"]
