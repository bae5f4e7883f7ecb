"""Sphinx directive ``jitr-cli``: the command-line reference, generated from the apps' flags.

Every console script of ``pyproject.toml``'s ``[project.scripts]`` gets a section: its
module's docstring (the text of its ``--help``), then one ``.. option::`` per flag that
its ``--help`` lists (the flags its module defines and the ``FlagHolder`` globals it uses,
``--workdir`` and ``--config`` among them), with the flag's help text, type and default;
a ``--config`` with a built-in ConfigDict also shows its fields. The options are
``std:cmdoption`` objects (``:option:`jitr-train --config```), in ``objects.inv`` too.

The flags are read in a separate interpreter (``app_flags.py``). The page is read again on
every build, so it follows the flags as they are.
"""

from __future__ import annotations

import inspect
import json
import pathlib
import subprocess
import sys

from app_flags import ROOT, console_scripts
from docutils import nodes
from docutils.parsers.rst import Parser as RstParser
from docutils.utils import new_document
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_id

DOCNAME = "cli"


def read_flags(module_names: list[str]) -> list[dict]:
  """``app_flags.describe(module_names)``, run by a fresh interpreter."""
  done = subprocess.run(
    [sys.executable, str(pathlib.Path(__file__).with_name("app_flags.py")), *module_names],
    capture_output=True,
    text=True,
    cwd=ROOT,
    check=False,
  )
  if done.returncode != 0:
    raise RuntimeError(f"reading the apps' flags failed:\n{done.stderr[-3000:]}")
  return json.loads(done.stdout)


def help_rst(doc: str) -> list[str]:
  """A module docstring as reST, each indented block after a blank line (a command line)
  as a shell code block."""
  out: list[str] = []
  previous_blank, in_block = True, False
  for line in inspect.cleandoc(doc).splitlines():
    if line.startswith(" ") and line.strip() and previous_blank and not in_block:
      out += [".. code-block:: shell", ""]
      in_block = True
    elif line.strip() and not line.startswith(" "):
      in_block = False
    out.append(line)
    previous_blank = not line.strip()
  return out


def option_signature(flag: dict) -> str:
  name = flag["name"]
  if flag["boolean"]:
    return f"--{name}, --no{name}"
  return f"--{name}=FILE" if flag["config"] == "file" else f"--{name}=VALUE"


class JitrCli(SphinxDirective):
  """One section per console script: its usage text and its options."""

  has_content = False

  def _parse(self, lines: list[str]) -> list[nodes.Node]:
    """``lines`` parsed as reST (the page itself is MyST Markdown), as eval-rst does."""
    document = new_document(self.get_source_info()[0], self.state.document.settings)
    document.reporter = self.state.document.reporter
    RstParser().parse("\n".join(lines) + "\n", document)
    return list(document.children)

  def run(self) -> list[nodes.Node]:
    scripts = console_scripts()
    apps = {a["module"]: a for a in read_flags(list(dict.fromkeys(scripts.values())))}
    sections = []
    for script, module in scripts.items():
      section = nodes.section(ids=[make_id(self.env, self.state.document, "", script)])
      section["names"].append(script)
      section += nodes.title(script, "", nodes.literal(script, script))
      self.state.document.note_implicit_target(section, section)
      section += self._parse([f".. program:: {script}", ""])
      section += self._parse(help_rst(apps[module]["doc"]))
      section += self._parse([f"Its flags (the module ``{module}``):", ""])
      for flag in apps[module]["flags"]:
        section += self._option(flag)
      sections.append(section)
    return sections

  def _option(self, flag: dict) -> list[nodes.Node]:
    parsed = self._parse([f".. option:: {option_signature(flag)}", ""])
    content = next(n for p in parsed for n in p.findall(addnodes.desc_content))
    content += nodes.paragraph(flag["help"], flag["help"])
    override = f"--{flag['name']}.FIELD=VALUE"
    facts = nodes.paragraph()
    if flag["config"] == "file":
      facts += [
        nodes.Text("A config file ("),
        nodes.literal("configs/*.py", "configs/*.py"),
        nodes.Text("); "),
        nodes.literal(override, override),
        nodes.Text(" overrides one of its fields."),
      ]
    elif flag["config"] == "dict":
      facts += [
        nodes.Text("A built-in config; "),
        nodes.literal(override, override),
        nodes.Text(" overrides one of its fields, which are (with their defaults):"),
      ]
    else:
      default = flag["default"]
      facts += nodes.Text(f"Type: {flag['type']}; default: ")
      if default is None:
        facts += nodes.Text("none")
      elif default == "":
        facts += nodes.Text("empty")
      else:
        facts += nodes.literal(default, default)
      facts += nodes.Text(".")
    content += facts
    if flag["config"] == "dict":
      block = nodes.literal_block(flag["default"], flag["default"])
      block["language"] = "yaml"
      content += block
    return parsed


def _always_read(app, env, added, changed, removed) -> list[str]:
  return [DOCNAME] if DOCNAME in env.found_docs else []


def setup(app: Sphinx) -> dict:
  app.add_directive("jitr-cli", JitrCli)
  app.connect("env-get-outdated", _always_read)
  return {"parallel_read_safe": True, "parallel_write_safe": True}
