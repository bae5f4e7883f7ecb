"""Sphinx glue for jitr's API reference.

* Napoleon reads the ``Args:`` / ``Returns:`` / ``Raises:`` / ``Attributes:`` sections of
  functions and classes, but not the one-paragraph docstrings of attributes and properties:
  jitr writes those as prose (``"Every reported Recall@K cut-off: ..."``), which napoleon
  would split at the first colon into a type and a description.
* A reference to a public object by the module that defines it (the type hints say
  ``jitr.evaluation.suite.CrossModalScores``) resolves to its documented public name
  (``jitr.evaluation.CrossModalScores``).
* A named tuple's fields are documented once, by its ``Attributes:`` section (not again as
  "Alias for field number N"). A constant re-exported by a package shows the doc comment
  (``#:``) of the module that defines it, never the docstring of its type (``dict``'s).
* ``.. jitr-members:: PACKAGE`` documents every name of ``PACKAGE.__all__`` (autodoc, in
  the order of the summary tables: alphabetical), so a new export gets its entry.
* A link to the repository's README (``../README.md``) goes to the page that includes it.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import sys

from docutils import nodes
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.ext import napoleon
from sphinx.pycode import ModuleAnalyzer, PycodeError
from sphinx.util.docutils import SphinxDirective

# The packages whose ``__all__`` the API reference documents.
PUBLIC_PACKAGES = (
  "jitr",
  "jitr.losses",
  "jitr.relevance",
  "jitr.data",
  "jitr.models",
  "jitr.training",
  "jitr.evaluation",
  "jitr.experiment",
  "jitr.torch",
)
README_PAGE = "overview"
_PUBLIC: dict[int, str] = {}  # id(exported object) -> its public name


def _prose_attribute_docstrings(app, what, name, obj, options, lines) -> None:
  if what in ("attribute", "data", "property"):
    return
  napoleon._process_docstring(app, what, name, obj, options, lines)


def _skip_tuple_fields(app, what, name, obj, skip, options):
  if (getattr(obj, "__doc__", None) or "").startswith("Alias for field number"):
    return True
  return None


def _data_docstring(app, what, name, obj, options, lines) -> None:
  """A constant's doc comment (``#:``) from the module that defines it, when it is documented
  under the package that re-exports it; never its type's docstring."""
  if what not in ("data", "attribute"):
    return
  if lines and "\n".join(lines).strip() == (inspect.getdoc(type(obj)) or "").strip():
    lines.clear()
  package, _, short = name.rpartition(".")
  if lines or not package.startswith("jitr"):
    return
  for module_name, module in list(sys.modules.items()):
    if module_name.startswith(package + ".") and getattr(module, short, None) is obj:
      try:
        docs = ModuleAnalyzer.for_module(module_name).find_attr_docs()
      except PycodeError:
        continue
      if ("", short) in docs:
        lines.extend(docs[("", short)])
        return


def _public_names() -> dict[int, str]:
  """``id(object) -> "package.name"`` of every exported class, function and module."""
  out: dict[int, str] = {}
  for package in PUBLIC_PACKAGES:
    module = importlib.import_module(package)
    for name in module.__all__:
      value = getattr(module, name)
      if inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value):
        out.setdefault(id(value), f"{package}.{name}")
  return out


def _lookup(dotted: str):
  """The object named ``dotted`` (``pkg.module.Class.attr``), or None."""
  parts = dotted.split(".")
  for cut in range(len(parts), 0, -1):
    try:
      value = importlib.import_module(".".join(parts[:cut]))
    except ImportError:
      continue
    try:
      for attr in parts[cut:]:
        value = getattr(value, attr)
    except AttributeError:
      return None
    return value
  return None


def _public_target(target: str) -> str | None:
  """``target`` by its public name when it is (a member of) an exported object."""
  if not target.startswith("jitr."):
    return None
  if not _PUBLIC:  # once per process: object ids mean nothing in another one
    _PUBLIC.update(_public_names())
  parts = target.split(".")
  for cut in range(len(parts), 1, -1):
    public = _PUBLIC.get(id(_lookup(".".join(parts[:cut]))))
    if public is not None:
      new = ".".join([public, *parts[cut:]])
      return new if new != target else None
  return None


def _resolve(app: Sphinx, env, node, contnode):
  """A jitr reference that the Python domain did not resolve as written.

  By the public name of its object (``jitr.evaluation.suite.CrossModalScores``, or
  ``CiderD.prepare_candidates`` written in ``jitr.relevance.cider``); else a relative name
  (``RelevanceRecordsError``, ``Objective.partial_sums``, ``Orientation``) by the one
  documented object whose name ends so, a type alias (documented as data) included; a
  private name (``_Term``, in a type hint) as plain text: private names are not documented.
  """
  if node.get("refdomain") != "py":
    return None
  domain = env.get_domain("py")
  target, reftype = node["reftarget"], node["reftype"]
  module = node.get("py:module") or ""
  candidates = [target] if target.startswith("jitr.") else [f"{module}.{target}"]
  for candidate in candidates:
    public = _public_target(candidate)
    if public is not None:
      return domain.resolve_xref(env, node["refdoc"], app.builder, reftype, public, node, contnode)
  if target.startswith("jitr.") or not all(p.isidentifier() for p in target.split(".")):
    return None
  specific = node.get("refspecific", False)
  node["refspecific"] = True
  try:
    for role in dict.fromkeys((reftype, "obj")):
      found = domain.resolve_xref(env, node["refdoc"], app.builder, role, target, node, contnode)
      if found is not None:
        return found
  finally:
    node["refspecific"] = specific
  last = target.rsplit(".", 1)[-1]
  if module.startswith("jitr") and last.startswith("_") and not last.startswith("__"):
    return contnode
  return None


def autodoc_directive(value) -> str:
  """The autodoc directive that documents ``value``."""
  if inspect.ismodule(value):
    return "automodule"
  if inspect.isclass(value):
    return "autoexception" if issubclass(value, BaseException) else "autoclass"
  return "autofunction" if callable(value) else "autodata"


class JitrMembers(SphinxDirective):
  """``.. jitr-members:: PACKAGE``: one autodoc entry per name of ``PACKAGE.__all__`` (reST)."""

  required_arguments = 1

  def run(self) -> list[nodes.Node]:
    package = self.arguments[0]
    module = importlib.import_module(package)
    lines: list[str] = []
    for name in sorted(module.__all__, key=str.lower):
      lines += [f".. {autodoc_directive(getattr(module, name))}:: {package}.{name}", ""]
    holder = nodes.container()
    source = self.get_source_info()[0]
    self.state.nested_parse(StringList(lines, source=source), self.content_offset, holder)
    return list(holder.children)


def _readme_links(app: Sphinx, doctree: nodes.document) -> None:
  readme = str(pathlib.Path(app.srcdir).parent / "README")
  for node in doctree.findall(addnodes.pending_xref):
    if node.get("reftype") == "myst" and node.get("reftarget") == readme:
      node["reftarget"] = README_PAGE


def setup(app: Sphinx) -> dict:
  app.setup_extension("sphinx.ext.napoleon")
  napoleons = [
    listener
    for listener in app.events.listeners.get("autodoc-process-docstring", [])
    if listener.handler is napoleon._process_docstring
  ]
  if len(napoleons) != 1:  # this Sphinx hooks napoleon in differently: see pyproject's docs
    raise ExtensionError("jitr_api: napoleon's autodoc-process-docstring hook not found")
  app.disconnect(napoleons[0].id)
  app.connect("autodoc-process-docstring", _data_docstring, priority=400)
  app.connect("autodoc-process-docstring", _prose_attribute_docstrings)
  app.connect("autodoc-skip-member", _skip_tuple_fields)
  app.connect("missing-reference", _resolve)
  app.add_directive("jitr-members", JitrMembers)
  app.connect("doctree-read", _readme_links)
  return {"parallel_read_safe": True, "parallel_write_safe": True}
