"""The config files shipped with jitr, and what the apps' ``--help`` says about configs.

* :func:`shipped_configs_dir` -- the folder of the shipped config files: the package
  ``jitr.configs`` of an installed jitr, else ``configs/`` beside the ``jitr`` package.
* :func:`resolve_config_argument` -- ``--config=configs/NAME.py[:ARG]`` (or ``NAME.py``)
  that names no existing file becomes the shipped ``NAME.py``, so the documented commands
  work from any directory; an existing path is kept.
* :func:`field_meanings` -- ``{dotted field: its one-line meaning}`` read from the comments
  of a config file's ``get_config`` (``ast`` and ``tokenize``: the file is not run).
* :func:`config_tree` -- a ConfigDict as an indented tree of ``field: default   meaning``.

Nothing here imports JAX; the config files themselves may (configs/default.py does).
"""

from __future__ import annotations

import ast
import importlib.util
import io
import os
import re
import tokenize
from collections.abc import Mapping, Sequence
from typing import Any

# A field's meaning is one line: a first sentence longer than this is cut at its first
# top-level ": " or "; " (else at a word).
MEANING_WIDTH = 100


def shipped_configs_dir() -> str:
  """The folder holding the shipped config files: ``jitr.configs``'s (an installed jitr),
  or, where that package cannot be found (a checkout on ``PYTHONPATH``), ``configs``
  beside the ``jitr`` package's folder."""
  try:
    spec = importlib.util.find_spec("jitr.configs")
  except (ImportError, ValueError):
    spec = None
  if spec is not None and spec.submodule_search_locations:
    return list(spec.submodule_search_locations)[0]
  return fallback_configs_dir()


def fallback_configs_dir() -> str:
  """``<folder above the jitr package>/configs``: the configs of a source checkout."""
  import jitr

  return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(jitr.__file__))), "configs")


def shipped_name(path: str) -> str | None:
  """``NAME.py`` when ``path`` is written ``configs/NAME.py`` or ``NAME.py`` (``./`` and
  repeated separators allowed), else None."""
  parts = [p for p in os.path.normpath(path).split(os.sep) if p]
  if parts and parts[-1].endswith(".py") and parts[:-1] in ([], ["configs"]):
    return parts[-1]
  return None


def resolve_config_argument(value: str, configs_dir: str) -> str:
  """``value`` (``PATH[:ARG]``, as ``--config=`` takes it) with PATH replaced by the shipped
  file ``configs_dir/NAME.py`` when PATH does not exist and is written ``configs/NAME.py``
  or ``NAME.py`` and that shipped file exists; otherwise ``value`` unchanged."""
  path, sep, arg = value.partition(":")
  if not path or os.path.exists(path):
    return value
  name = shipped_name(path)
  if name is None or not os.path.isfile(os.path.join(configs_dir, name)):
    return value
  return os.path.join(configs_dir, name) + sep + arg


def resolve_config_arguments(argv: Sequence[str], names: Sequence[str], configs_dir: str):
  """``argv`` with the value of every ``--NAME=VALUE`` / ``--NAME VALUE`` (``-NAME`` too)
  of a flag in ``names`` passed through :func:`resolve_config_argument`; ``--`` ends the
  flags."""
  out = list(argv)
  i = 1
  while i < len(out):
    arg = out[i]
    if arg == "--":
      break
    name, eq, value = arg.lstrip("-").partition("=")
    if arg.startswith("-") and name in names:
      if eq:
        out[i] = f"{arg[: len(arg) - len(value)]}{resolve_config_argument(value, configs_dir)}"
      elif i + 1 < len(out):
        out[i + 1] = resolve_config_argument(out[i + 1], configs_dir)
        i += 1
    i += 1
  return out


def config_file_usage(path: str) -> tuple[str, str]:
  """``(form, summary)`` of a config file: its ``--config`` form (``shapes.py:NAME[,MODEL]``,
  found in its docstring as ``configs/FILE:ARGS``) and its docstring's first sentence."""
  name = os.path.basename(path)
  with open(path, encoding="utf-8") as f:
    doc = ast.get_docstring(ast.parse(f.read())) or ""
  form = re.search(rf"configs/{re.escape(name)}(:[A-Z][A-Z,\[\]]*)", doc)
  first = plain_text(doc.strip().split("\n\n")[0])
  first = re.sub(r":?\s*--config=\S+$", ".", " ".join(first.split()))  # the form, said apart
  return name + (form.group(1) if form else ""), first_sentence(first)


def defines_get_config(path: str) -> bool:
  """Whether the file at ``path`` defines ``get_config`` (a config file; ``common.py``,
  what the config files share, does not)."""
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read())
  return any(isinstance(n, ast.FunctionDef) and n.name == "get_config" for n in tree.body)


def shipped_configs(configs_dir: str) -> list[tuple[str, str]]:
  """:func:`config_file_usage` of every config file of ``configs_dir`` (``*.py`` but
  ``_*.py``, defining ``get_config``), by name."""
  files = sorted(f for f in os.listdir(configs_dir) if f.endswith(".py") and not f.startswith("_"))
  paths_ = [os.path.join(configs_dir, f) for f in files]
  return [config_file_usage(p) for p in paths_ if defines_get_config(p)]


def shipped_config_lines(configs_dir: str) -> list[str]:
  """The help's list of the shipped config files: where they are, then one line each."""
  usages = shipped_configs(configs_dir)
  width = max((len(form) for form, _ in usages), default=0)
  lines = [
    f"config files shipped with jitr, in {configs_dir} (--config=configs/NAME.py[:ARG] reads "
    "them from any directory; a file of that path in the current directory is read first):"
  ]
  lines += [f"  {form.ljust(width)}   {summary}".rstrip() for form, summary in usages]
  return lines


def plain_text(text: str) -> str:
  """``text`` without Sphinx markup: ````x```` -> ``x``, ``:func:`a.b``` (also ``!a.b``)
  -> ``a.b``, ``:class:`~a.B``` -> ``B``."""
  text = re.sub(r":[a-z]+(?::[a-z]+)?:`!?~([^`<]*?\.)?([^`.<]+)`", r"\2", text)
  text = re.sub(r":[a-z]+(?::[a-z]+)?:`!?([^`]+)`", r"\1", text)
  return re.sub(r"``(.+?)``", r"\1", text, flags=re.DOTALL)


def first_sentence(text: str, width: int = MEANING_WIDTH) -> str:
  """The first sentence of ``text`` (up to ". " before a capital letter), on one line; one
  longer than ``width`` is cut at its first ": " or "; " outside brackets, else after the
  last word that fits, ending in "...".

  >>> first_sentence("TFDS data dir; default: <workdir>/../tfds. Shared.")
  'TFDS data dir; default: <workdir>/../tfds.'
  """
  text = " ".join(text.split())
  match = re.search(r"[.!?](?=\s+[A-Z\"'(]|$)", text)
  sentence = text[: match.end()] if match else text
  if len(sentence) <= width:
    return sentence
  depth = 0
  for i, ch in enumerate(sentence):
    depth += ch in "([{"
    depth -= ch in ")]}"
    if depth == 0 and ch in ":;" and sentence[i + 1 : i + 2] == " " and 20 <= i <= width:
      return sentence[:i]
  return sentence[: sentence.rfind(" ", 0, width - 3)].rstrip(",;:") + "..."


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


def file_meanings(*paths: str) -> dict[str, str]:
  """:func:`field_meanings` of each readable file of ``paths``, later files winning."""
  out: dict[str, str] = {}
  for path in paths:
    try:
      with open(path, encoding="utf-8") as f:
        out.update(field_meanings(f.read()))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
      continue
  return out


def _is_group(value: Any) -> bool:
  return isinstance(value, Mapping) or hasattr(value, "items") and hasattr(value, "keys")


def config_tree(
  config: Any, meanings: Mapping[str, str] | None = None, *, indent: int = 2
) -> list[str]:
  """``config`` (a ConfigDict) as lines ``field: default`` (``repr`` of the value), a
  group as ``name:`` with its fields indented below it (an empty one ``name: {}``), each
  followed by its meaning from ``meanings`` (by dotted field) in one column.

  >>> import ml_collections
  >>> c = ml_collections.ConfigDict({"seed": 0, "model": {"embed_dim": 8}})
  >>> print("\\n".join(config_tree(c, {"model.embed_dim": "joint space width"})))
  model:
    embed_dim: 8   joint space width
  seed: 0
  """
  meanings = meanings or {}
  rows: list[tuple[str, str]] = []

  def walk(node: Any, prefix: str, depth: int) -> None:
    for key, value in node.items():
      dotted, pad = f"{prefix}{key}", " " * (indent * depth)
      if _is_group(value):
        rows.append((f"{pad}{key}:" + ("" if len(value) else " {}"), meanings.get(dotted, "")))
        walk(value, f"{dotted}.", depth + 1)
      else:
        rows.append((f"{pad}{key}: {value!r}", meanings.get(dotted, "")))

  walk(config, "", 0)
  width = min(max((len(text) for text, meaning in rows if meaning), default=0), 40)
  return [f"{text.ljust(width)}   {meaning}" if meaning else text for text, meaning in rows]
