"""``scripts/check_docs_layout.py`` and ``docs/_ext/jitr_layout.py`` on small hand-written
pages: where inline code in a table may break, the links whose target id is missing (read
from the files), and, where a Chromium is installed, that the browser check reports each
kind of problem on a page that has it and nothing on a page that fits.

The browser check of the whole site is not part of the suite: it needs a Chromium, which
the suite's install (pip, no root) cannot provide; docs/getting-started.md gives its command
and its last result. Without a Chromium the two browser tests here are skipped.
"""

import importlib.util
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load(name: str, path: pathlib.Path):
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  sys.modules[name] = module
  spec.loader.exec_module(module)
  return module


check_docs_layout = load("check_docs_layout", ROOT / "scripts" / "check_docs_layout.py")
jitr_layout = load("jitr_layout", ROOT / "docs" / "_ext" / "jitr_layout.py")
CHROMIUM = check_docs_layout.find_chromium(None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")

LONG_LINE = "python scripts/train.py " + " ".join(f"--config.field_{i}=value" for i in range(20))
# The page's root hides what sticks out sideways, as furo's does (html { overflow-x: hidden }).
STYLE = """
html { overflow-x: hidden; }
body { margin: 0; font: 16px/1.5 sans-serif; }
article { max-width: 560px; padding: 0 20px; }
.squeezed { width: 120px; }
.squeezed code { overflow-wrap: anywhere; }
.scroll { overflow-x: auto; }
.filler { height: 2500px; }
"""


def page(body: str) -> str:
  return (
    f"<!doctype html><html><head><meta charset='utf-8'><style>{STYLE}</style></head><body>"
    f"<article role='main'><section id='start'><h1>Page</h1>{body}</section></article>"
    "</body></html>"
  )


BAD = page(
  "<p><a href='#missing'>missing</a> <a href='other.html#nowhere'>elsewhere</a>"
  " <a id='held' href='#far'>far</a></p>"
  f"<pre style='overflow: visible'>{LONG_LINE}</pre>"
  "<table class='squeezed'><tr><td><code class='literal'>jitr.losses.smooth_ndcg_of_a_list"
  "</code></td></tr></table>"
  "<div style='width: 2000px'>a wide block</div>"
  "<div class='filler'></div><section id='far'><h2>Far</h2><div class='filler'></div></section>"
  # a script that keeps a link from scrolling, as a theme's click handler could
  "<script>document.getElementById('held').addEventListener('click', e => e.preventDefault())"
  "</script>"
)
GOOD = page(
  "<p><a href='#far'>far</a> <a href='other.html#there'>elsewhere</a> <a href='#'>top</a></p>"
  f"<pre style='overflow-x: auto'>{LONG_LINE}</pre>"
  "<div class='scroll'><table><tr>"
  + "".join(f"<td><code>jitr.<wbr>losses.<wbr>smooth_<wbr>ndcg_{i}</code></td>" for i in range(9))
  + "</tr></table></div>"
  "<table class='squeezed'><tr><td><code>jitr.<wbr>losses.<wbr>smooth_<wbr>ndcg</code>"
  "</td></tr></table>"
  "<div class='filler'></div><section id='far'><span id='far-slug'></span><h2>Far</h2>"
  "<div class='filler'></div></section>"
)
OTHER = page("<section id='there'><h2>There</h2></section>")


@pytest.fixture
def site(tmp_path):
  """``{"bad": folder, "good": folder}``: each an index.html and the other.html it links."""
  out = {}
  for name, text in (("bad", BAD), ("good", GOOD)):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "index.html").write_text(text, encoding="utf-8")
    (folder / "other.html").write_text(OTHER, encoding="utf-8")
    out[name] = folder
  return out


def test_inline_code_in_a_table_may_break_after_a_separator_between_two_letters():
  assert jitr_layout.pieces("jitr.losses.smooth_ndcg") == ["jitr.", "losses.", "smooth_", "ndcg"]
  assert jitr_layout.pieces("tests/apps/test_x.py") == ["tests/", "apps/", "test_", "x.", "py"]
  assert jitr_layout.pieces("minmax,power:2") == ["minmax,", "power:", "2"]
  assert jitr_layout.pieces("--config.x=1") == ["--config.", "x=", "1"]
  # no piece that starts or ends a name with its separator alone, none inside a word
  assert jitr_layout.pieces("__init__.py") == ["__init__.py"]
  assert jitr_layout.pieces("/data/") == ["/data/"]
  assert jitr_layout.pieces("smooth_ndcg") == ["smooth_", "ndcg"]
  assert jitr_layout.pieces("ndcg") == ["ndcg"]


def test_links_whose_target_id_is_missing_are_found_in_the_files(site):
  bad = check_docs_layout.link_target_problems(site["bad"], [site["bad"] / "index.html"])
  assert bad == [
    "index.html: anchor: link #missing: no element with id 'missing' on this page",
    "index.html: anchor: link other.html#nowhere: no element with id 'nowhere' in other.html",
  ]
  good = check_docs_layout.link_target_problems(site["good"], [site["good"] / "index.html"])
  assert good == []


@needs_chromium
def test_the_browser_check_reports_each_kind_of_problem(site, capsys):
  assert check_docs_layout.main([str(site["bad"]), "--widths", "800", "--pages", "index.html"]) == 1
  lines = capsys.readouterr().out.splitlines()
  kinds = {line.split(": ")[1] for line in lines}
  assert kinds == {"overflow", "page-width", "code-break", "anchor"}, lines
  text = "\n".join(lines)
  assert "<pre> in #start" in text and "does not scroll" in text
  assert "page-width: the page is" in text and '(widest: <div> in #start "a wide block"' in text
  assert '"jitr.losses.smooth_ndcg_of_a_list"' in text and "inside a word" in text
  assert 'link #far ("far"): the page stays at its top' in text
  assert "#missing" in text and "other.html#nowhere" in text
  assert "heading id" not in text  # #far itself, reached as the address's #id, lands


@needs_chromium
def test_the_browser_check_passes_pages_that_fit(site, capsys):
  status = check_docs_layout.main([str(site["good"]), "--widths", "800,400"])
  assert status == 0, capsys.readouterr().out
