"""What a config file's comments say its fields mean: ``{dotted field: one-line meaning}``
read from the comments of its ``get_config`` (``ast`` and ``tokenize``: the file is not
run), for the apps' ``--help``."""

from __future__ import annotations

import ast
import io
import tokenize

from jitr.papers.plain_text import first_sentence


def _comments(source: str) -> dict[int, tuple[str, bool]]:
  """``{line: (comment text, whether the comment is the whole line)}`` of ``source``."""
  out = {}
  for tok in tokenize.generate_tokens(io.StringIO(source).readline):
    if tok.type == tokenize.COMMENT:
      own_line = not tok.line[: tok.start[1]].strip()
      out[tok.start[0]] = (tok.string.lstrip("#").strip(), own_line)
  return out


def _meaning(comments: dict[int, tuple[str, bool]], first: int, last: int) -> str | None:
  """The comment at the end of line ``last``, else the comment lines directly above line
  ``first``, as one line (:func:`first_sentence`); None without either."""
  text, own_line = comments.get(last, ("", True))
  if text and not own_line:
    return first_sentence(text)
  above, line = [], first - 1
  while line in comments and comments[line][1]:
    above.insert(0, comments[line][0])
    line -= 1
  return first_sentence(" ".join(above)) if above else None


def _dotted(target: ast.expr) -> str | None:
  """``a.b`` of an assignment target ``c.a.b`` (an attribute chain on a name), else None."""
  names = []
  while isinstance(target, ast.Attribute):
    names.insert(0, target.attr)
    target = target.value
  return ".".join(names) if names and isinstance(target, ast.Name) else None


def _entries(value: ast.expr) -> list[tuple[str, ast.expr, int]]:
  """``(key, value node, first line)`` of the entries of a ``ConfigDict(...)``, ``dict(...)``
  or ``{...}`` literal, nested calls unwrapped; ``[]`` for any other expression."""
  if isinstance(value, ast.Call):
    func = (
      value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
    )
    if func == "ConfigDict" and value.args:
      return _entries(value.args[0])
    if func == "dict":
      return [(k.arg, k.value, k.value.lineno) for k in value.keywords if k.arg]
    return []
  if isinstance(value, ast.Dict):
    return [
      (k.value, v, k.lineno)
      for k, v in zip(value.keys, value.values, strict=True)
      if isinstance(k, ast.Constant) and isinstance(k.value, str)
    ]
  return []


def field_meanings(source: str, function: str = "get_config") -> dict[str, str]:
  """``{dotted field: meaning}`` of the fields that ``function`` of config file ``source``
  assigns (``c.FIELD = ...``) and of the entries of the ``ConfigDict(dict(...))`` /
  ``{...}`` groups it assigns: the comment at the end of the line, else the comment lines
  directly above it (:func:`first_sentence` of them). Fields without a comment are absent."""
  comments = _comments(source)
  tree = ast.parse(source)
  out: dict[str, str] = {}

  def visit(prefix: str, value: ast.expr, first_line: int) -> None:
    for key, node, line in _entries(value):
      if line != first_line:  # an entry on its group's first line shares the group's comment
        meaning = _meaning(comments, line, node.end_lineno)
        if meaning:
          out[f"{prefix}.{key}"] = meaning
      visit(f"{prefix}.{key}", node, line)

  for func in tree.body:
    if not (isinstance(func, ast.FunctionDef) and func.name == function):
      continue
    for stmt in ast.walk(func):
      if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        continue
      dotted = _dotted(stmt.targets[0])
      if dotted is None:
        continue
      meaning = _meaning(comments, stmt.lineno, stmt.end_lineno)
      if meaning:
        out[dotted] = meaning
      visit(dotted, stmt.value, stmt.lineno)
  return out
