"""Sphinx extension: break opportunities for inline code in tables (HTML only).

A long identifier in a table cell (a test name in faults.md, ``jitr.losses.smooth_ndcg`` in
a summary table) either widens its column, squeezing the others to a word per line, or, told
to wrap anywhere, breaks inside a word. Here each inline literal in a table gets a ``<wbr>``
after every ``.``, ``_``, ``/``, ``,``, ``:`` or ``=`` that stands between two letters or
digits: the browser may break the line there and nowhere else inside a word (a ``<wbr>`` is
not copied with the text). Each piece stays in its ``<span class="pre">`` (no wrapping
inside); a table that is still wider than the text column scrolls in its own box
(``_static/jitr.css``). Runs after references are resolved, so cross-reference literals
(autosummary's names) get them too; other builders see the text unchanged.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

# After a separator that follows a letter or digit and precedes one: ``smooth_|ndcg``,
# ``jitr.|losses``, ``tests/|apps`` (not ``__|init__`` or a trailing ``.``).
BREAK = re.compile(r"(?<=[^\W_][._/,:=])(?=[^\W_])")


def pieces(text: str) -> list[str]:
  """``text`` split where a ``<wbr>`` goes (``"a.b_c"`` -> ``["a.", "b_", "c"]``)."""
  return BREAK.split(text)


class TableCodeBreaks(SphinxPostTransform):
  default_priority = 900  # after reference resolution (10) and the builders' own transforms
  formats = ("html",)

  def run(self, **kwargs) -> None:
    for table in list(self.document.findall(nodes.table)):
      for literal in list(table.findall(nodes.literal)):
        for text in list(literal.findall(nodes.Text)):
          parts = pieces(str(text))
          if len(parts) < 2:
            continue
          new: list[nodes.Node] = []
          for i, part in enumerate(parts):
            if i:
              new.append(nodes.raw("", "<wbr>", format="html"))
            new.append(nodes.Text(part))
          text.parent.replace(text, new)


def setup(app: Sphinx) -> dict:
  app.add_post_transform(TableCodeBreaks)
  return {"parallel_read_safe": True, "parallel_write_safe": True}
