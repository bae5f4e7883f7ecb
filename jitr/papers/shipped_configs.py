"""The config files shipped with jitr as the apps' ``--help`` and error lines name them.

* :func:`shipped_configs` -- each shipped config file's ``--config`` form and summary.
* :func:`shipped_config_lines` -- the help's list of them and the folder that holds them.
* :func:`shipped_names` -- their ``--config`` forms on one line, for an error.
* :func:`file_meanings` -- the fields' meanings read from the config files' comments.

Where the shipped files are, and how ``--config=configs/NAME.py`` finds them from any
directory: :mod:`jitr.papers.config_files`. Nothing here imports JAX; the config files
themselves may (configs/default.py does).
"""

from __future__ import annotations

import ast
import os
import re

from jitr.papers.config_files import shipped_configs_dir
from jitr.papers.field_meanings import field_meanings
from jitr.papers.plain_text import first_sentence, plain_text


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


def shipped_names() -> str:
  """``configs/default.py, configs/paper.py:DATA,MODEL,LOSS, ...``: the shipped config files
  as ``--config`` takes them."""
  folder = shipped_configs_dir()
  try:
    forms = [form for form, _ in shipped_configs(folder)]
  except (OSError, SyntaxError, UnicodeDecodeError):
    return f"configs/*.py (in {folder})"
  return ", ".join(f"configs/{form}" for form in forms)


def file_meanings(*paths: str) -> dict[str, str]:
  """:func:`jitr.papers.field_meanings.field_meanings` of each readable file of ``paths``,
  later files winning."""
  out: dict[str, str] = {}
  for path in paths:
    try:
      with open(path, encoding="utf-8") as f:
        out.update(field_meanings(f.read()))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
      continue
  return out
