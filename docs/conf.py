"""Sphinx configuration of jitr's documentation site (MyST Markdown pages in docs/).

Build: ``scripts/docs.sh`` (``python -m sphinx -W -n --keep-going -j 1 -b html docs
docs/_build/html``); ``tests/test_docs_site.py`` builds it the same way.
Nothing is fetched at build time (no intersphinx): references to other packages' types that
nitpicky mode cannot resolve are listed in ``nitpick_ignore_regex`` below, by package.
"""

import pathlib
import sys

DOCS = pathlib.Path(__file__).resolve().parent
# The jitr of this source tree (installed or not) and the extensions in _ext/.
sys.path[:0] = [str(DOCS.parent), str(DOCS / "_ext")]

project = "jitr"
author = "jitr authors"
copyright = "jitr authors"
release = version = "0.1.0"

extensions = [
  "myst_parser",
  "sphinx.ext.autodoc",
  "sphinx.ext.autosummary",
  "sphinx.ext.napoleon",
  "jitr_api",
  "jitr_cli",
  "jitr_layout",
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# MyST: ``#slug`` and ``faults.md#checkpoints``-style links (GitHub's slugs, as the README
# and the pages write them on GitHub) resolve to the headings of every level, and each
# heading carries its slug as a second HTML id, so ``training.html#GITHUB-SLUG`` lands on
# the section too (myst_heading_anchors_html_ids, on by default). No dollar math: the pages
# write formulas in Unicode, and ``$VAR`` is a shell variable.
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 6
myst_heading_anchors_html_ids = True

# autodoc / autosummary: api.md has a summary table per package and, below it, an entry per
# exported name (``jitr-members``, from jitr_api.py) on the same page: no generated stub
# pages. Members of classes in source order, type hints in the descriptions.
autosummary_generate = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_inherit_docstrings = False
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# Other packages' types, referenced by the type hints and docstrings: nothing is fetched at
# build time (no intersphinx), so nitpicky mode cannot resolve them. ``np``: the hints of a
# class that names a type imported only for type checking (scipy.sparse in
# jitr.relevance.cider) stay as written, ``np.ndarray`` among them.
nitpick_ignore_regex = [
  (
    r"py:.*",
    r"(jax|jaxlib|numpy|np|scipy|flax|optax|chex|orbax|torch|tensorflow|tensorflow_datasets"
    r"|sklearn|sentence_transformers|ml_collections|absl|PIL"
    r"|collections|typing|os|abc|pathlib|enum)(\..*)?",
  ),
]

# faults.md's tables sit under level-3 headings directly below the title.
suppress_warnings = ["myst.header"]

html_theme = "furo"
html_title = "jitr"
html_static_path = ["_static"]
# Code blocks and tables scroll in their own box, inline code in tables breaks only after
# "." "_" "/" (with jitr_layout's <wbr>): scripts/check_docs_layout.py checks it in Chromium.
html_css_files = ["jitr.css"]
