#!/usr/bin/env python
"""Render every page of the built documentation site in headless Chromium and report what
a reader would see cut, squeezed or misplaced; exit 1 on any problem.

Each page is loaded (``file://``) at every viewport width (default 1280 and 760 px, 900 px
tall) and one line is printed per problem:

* ``overflow``: a ``<pre>`` or ``<table>`` wider than its box or its column, and neither it
  nor an ancestor inside the article scrolls horizontally (``overflow-x: auto/scroll``), so
  its right part is cut off or widens the page; or the box it scrolls in reaches past the
  text column's right edge.
* ``page-width``: the page is wider than the viewport (it scrolls or is cut sideways).
* ``code-break``: an inline code element in a table is split across lines inside a word
  (between two letters or digits; a break after ``.``, ``_``, ``/`` or a space is fine).
* ``anchor``: a link to ``#x`` on the same page (``page.html#x`` of the page itself too)
  which, clicked, leaves its target away from the top of the viewport (the theme's
  ``scroll-margin-top`` allowed; a target near the end of a page only has to be in view once
  the page is scrolled to its end); the same for every id of every heading (its section's
  id and the GitHub-style slug ids before it, what ``page.html#slug`` links from the README
  or elsewhere use), reached as the address's ``#id``. ``href="#"`` (the page's top, as in
  the theme's "back to top") is not checked. Any link ``#x`` or ``page.html#x`` between the
  site's pages whose target id is missing is reported once, from the files.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``): the
standard library only, no websocket client, no browser download. The browser is
``--chromium``, else ``$CHROMIUM``, else ``chromium`` / ``chromium-browser`` /
``google-chrome`` on the PATH (Debian: ``apt-get install chromium``).

Usage: python scripts/check_docs_layout.py [HTML_DIR] [--widths 1280,760] [--build]
  [--pages api.html,...]
HTML_DIR defaults to docs/_build/html; without it (or with --build) the site is built first
into that folder as scripts/docs.sh builds it (sphinx -W -n). Exit status: 0 no problem,
1 problems (listed), 2 no browser or no site.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pathlib
import select
import shutil
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote, urlsplit

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_HTML = ROOT / "docs" / "_build" / "html"
# Sphinx's own pages: generated lists with no prose, code blocks or anchors of the docs.
SKIP_PAGES = {"genindex.html", "search.html", "py-modindex.html"}
HEIGHT = 900
CHROMIUM_FLAGS = (
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--no-default-browser-check",
  "--disable-extensions",
  "--mute-audio",
  "--remote-debugging-pipe",
  # api.html has hundreds of anchors to click: no limit of 200 navigations per 10 s
  "--disable-ipc-flooding-protection",
)

# Runs in the page; resolves to the list of problems found, one string each.
CHECK_JS = r"""
(async () => {
  const problems = [];
  const say = (kind, text) => problems.push(kind + ": " + text);
  const root = document.documentElement;
  const vw = root.clientWidth;
  const article = document.querySelector("article[role=main]") || document.body;
  const contentRight = (el) => {
    const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
    return r.right - parseFloat(cs.paddingRight) - parseFloat(cs.borderRightWidth);
  };
  const column = Math.min(contentRight(article), vw);  // the text column's right edge
  const shown = (el) => el.getClientRects().length > 0;
  const snippet = (el) => JSON.stringify((el.textContent || "").trim().replace(/\s+/g, " ")
    .slice(0, 60));
  const where = (el) => {
    const s = el.closest("[id]");
    return s ? " in #" + s.id : "";
  };
  const describe = (el) => "<" + el.tagName.toLowerCase() + ">" + where(el) + " " + snippet(el);
  await document.fonts.ready;

  // A horizontal scroller between el (included) and the article (excluded): a box whose
  // content scrolls sideways on its own, not the whole column.
  const scroller = (el) => {
    for (let a = el; a && a !== article && a !== document.body; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if (ox === "auto" || ox === "scroll") return a;
    }
    return null;
  };

  // 1. Code blocks and tables.
  for (const el of article.querySelectorAll("pre, table")) {
    if (!shown(el)) continue;
    const own = el.scrollWidth - el.clientWidth;
    const over = Math.max(own, el.getBoundingClientRect().right - contentRight(el.parentElement));
    const s = scroller(el);
    if (s === null) {
      if (over > 1) {
        const ox = getComputedStyle(el).overflowX;
        say("overflow", `${describe(el)} is ${Math.round(over)}px wider than its ` +
          `${own > 1 ? "box" : "column"} and does not scroll (overflow-x: ${ox}, no ` +
          "scrolling ancestor)");
      }
    } else {
      const right = s.getBoundingClientRect().right;
      if (right > column + 1) {
        say("overflow", `${describe(el)}: the box it scrolls in reaches ` +
          `${Math.round(right - column)}px past the text column`);
      }
    }
  }

  // 2. The page itself: the root's scroll width, and the right edge of every box that is not
  // clipped by a box around it (furo's root hides what sticks out, so its scroll width
  // alone does not show it) nor fixed to the window (an off-screen drawer).
  let widest = null, right = vw;
  const visit = (el) => {
    const cs = getComputedStyle(el);
    if (cs.position === "fixed" || cs.display === "none") return;
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > right + 1) { widest = el; right = r.right; }
    if (cs.overflowX !== "visible" && el !== document.body) return;
    for (const child of el.children) visit(child);
  };
  visit(document.body);
  const pageWidth = Math.max(root.scrollWidth, document.body.scrollWidth, Math.round(right));
  if (pageWidth > vw + 1) {
    say("page-width", `the page is ${pageWidth}px wide in a ${vw}px viewport` +
      (widest ? ` (widest: ${describe(widest)}, ${Math.round(right)}px)` : ""));
  }

  // 3. Inline code in tables: a line break between two letters or digits.
  const word = /[\p{L}\p{N}]/u;
  const range = document.createRange();
  for (const code of article.querySelectorAll("table code")) {
    if (!shown(code) || code.getClientRects().length < 2) continue;
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    let prev = null, text = "", broken = false;
    for (let node = walker.nextNode(); node && !broken; node = walker.nextNode()) {
      for (let i = 0; i < node.data.length; i++) {
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rects = range.getClientRects();
        const ch = node.data[i];
        if (rects.length === 0) {  // collapsed white space: still a break opportunity
          if (prev && /\s/.test(ch)) prev.ch = ch;
          text += ch;
          continue;
        }
        const r = rects[0];
        if (prev && r.top > prev.top + prev.height / 2 && word.test(prev.ch) && word.test(ch)) {
          say("code-break", `<code> ${JSON.stringify(code.textContent)}${where(code)} breaks ` +
            `inside a word: ${JSON.stringify(text + "|" + node.data.slice(i))}`);
          broken = true;
          break;
        }
        prev = {top: r.top, height: r.height, ch};
        text += ch;
      }
    }
  }

  // 4. Links to #x on this page, then every id of every heading (its section's id and the
  // slug ids before it: what page.html#slug links from elsewhere use): the target exists,
  // and a click on the link (for a heading id: the address's #id) brings it to the top.
  root.style.scrollBehavior = "auto";  // the final position, without waiting for smoothing
  const here = location.href.split("#")[0];
  const targets = new Map();
  for (const a of document.querySelectorAll("a[href]")) {
    const [page, frag] = [a.href.split("#")[0], a.href.split("#").slice(1).join("#")];
    if (page !== here || !frag) continue;
    const id = decodeURIComponent(frag);
    if (!targets.has(id)) targets.set(id, a);
  }
  for (const el of article.querySelectorAll("section[id], section > span[id]:empty")) {
    if (!targets.has(el.id)) targets.set(el.id, null);
  }
  const frame = () => new Promise((ok) => requestAnimationFrame(() => ok()));
  for (const [id, a] of targets) {
    const label = a ? `link #${id} (${snippet(a)})` : `heading id #${id}`;
    const target = document.getElementById(id) || document.getElementsByName(id)[0];
    if (!target) continue;  // a missing id: reported once, from the files
    if (!shown(target) && target.tagName !== "SPAN") {
      say("anchor", `${label}: its target is not displayed`);
      continue;
    }
    history.replaceState(null, "", here);
    window.scrollTo(0, 0);
    if (a) a.click(); else location.hash = "#" + encodeURIComponent(id);
    // Where the theme puts it (its scroll-margin-top), within the page's scroll range.
    const placed = () => {
      const top = target.getBoundingClientRect().top;
      const want = parseFloat(getComputedStyle(target).scrollMarginTop) || 0;
      const end = root.scrollHeight - innerHeight;
      const wantY = Math.min(Math.max(scrollY + top - want, 0), end);
      return {ok: Math.abs(scrollY - wantY) <= 2 && top > -2 && top < innerHeight, top, want};
    };
    let p = placed();
    for (let k = 0; !p.ok && k < 3; k++) { await frame(); p = placed(); }
    if (!p.ok) {
      const how = scrollY < 1 ? "the page stays at its top" : `the page scrolls to ${scrollY}px`;
      say("anchor", `${label}: ${how}, its target is ${Math.round(p.top)}px from the top of ` +
        `the viewport (expected ${Math.round(p.want)}px)`);
    }
  }
  history.replaceState(null, "", here);
  window.scrollTo(0, 0);
  return problems;
})()
"""


class DevTools:
  """A Chromium over ``--remote-debugging-pipe``: JSON messages ending in NUL, commands on
  the browser's fd 3, replies and events on its fd 4."""

  def __init__(self, chromium: str, user_data_dir: str):
    self.log = pathlib.Path(user_data_dir) / "chromium-stderr.log"
    to_browser_r, self._to_browser = os.pipe()
    self._from_browser, from_browser_w = os.pipe()

    def wire_fds():  # in the child: its fd 3 reads our commands, its fd 4 writes replies
      # (copies above 10 first: a pipe end may itself be fd 3 or 4)
      a = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
      b = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
      os.dup2(a, 3)  # inheritable, unlike the pipe ends, which close at exec
      os.dup2(b, 4)

    with open(self.log, "wb") as log:  # the child keeps its own copy
      self.proc = subprocess.Popen(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={user_data_dir}", "about:blank"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
        close_fds=False,  # only inheritable fds pass: 0-2 and the two above
        preexec_fn=wire_fds,
      )
    os.close(to_browser_r)
    os.close(from_browser_w)
    self._buffer = b""
    self._next_id = 0
    self._events: list[dict[str, Any]] = []

  def _gone(self) -> RuntimeError:
    try:
      self.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
      pass
    tail = self.log.read_text(errors="replace")[-2000:]
    return RuntimeError(f"Chromium closed its pipe (exit status {self.proc.poll()}): {tail}")

  def _read(self, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while b"\0" not in self._buffer:
      left = deadline - time.monotonic()
      if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
        raise TimeoutError("no answer from Chromium")
      chunk = os.read(self._from_browser, 1 << 20)
      if not chunk:
        raise self._gone()
      self._buffer += chunk
    message, _, self._buffer = self._buffer.partition(b"\0")
    return json.loads(message)

  def call(self, method: str, session: str | None = None, timeout: float = 60, **params):
    self._next_id += 1
    message = {"id": self._next_id, "method": method, "params": params}
    if session:
      message["sessionId"] = session
    try:
      os.write(self._to_browser, json.dumps(message).encode() + b"\0")
    except BrokenPipeError:
      raise self._gone() from None
    while True:
      reply = self._read(timeout)
      if reply.get("id") == self._next_id:
        if "error" in reply:
          raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})
      if "method" in reply:
        self._events.append(reply)

  def wait_for(self, method: str, session: str, timeout: float = 60) -> None:
    while True:
      for i, event in enumerate(self._events):
        if event["method"] == method and event.get("sessionId") == session:
          del self._events[i]
          return
      self._events.append(self._read(timeout))

  def close(self) -> None:
    try:
      self.call("Browser.close", timeout=10)
    except (TimeoutError, RuntimeError, OSError):
      pass
    try:
      self.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
      self.proc.kill()
      self.proc.wait()
    os.close(self._to_browser)
    os.close(self._from_browser)


def find_chromium(given: str | None) -> str | None:
  for name in (given, os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
    if name and (found := shutil.which(name)):
      return found
  return None


def build_site(out: pathlib.Path) -> None:
  """The site as scripts/docs.sh builds it (warnings are errors, nitpicky references)."""
  command = [
    *(sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-j", "1", "-q"),
    *("-b", "html", "-d", str(out.parent / "doctrees"), str(ROOT / "docs"), str(out)),
  ]
  subprocess.run(command, cwd=ROOT, check=True)


def pages_of(site: pathlib.Path, only: list[str] | None) -> list[pathlib.Path]:
  pages = sorted(p for p in site.glob("*.html") if p.name not in SKIP_PAGES)
  if only:
    pages = [p for p in pages if p.name in only]
  return pages


class _Anchors(HTMLParser):
  """The ids (and ``<a name>``) of a page, and the ``href`` of each of its links."""

  def __init__(self):
    super().__init__(convert_charrefs=True)
    self.ids: set[str] = set()
    self.hrefs: list[str] = []

  def handle_starttag(self, tag, attrs):
    attrs = dict(attrs)
    if attrs.get("id"):
      self.ids.add(attrs["id"])
    if tag == "a" and attrs.get("name"):
      self.ids.add(attrs["name"])
    if tag == "a" and attrs.get("href"):
      self.hrefs.append(attrs["href"])


def link_target_problems(site: pathlib.Path, pages: list[pathlib.Path]) -> list[str]:
  """Links ``#x`` and ``page.html#x`` (the page itself or another page of the site) whose
  target id is not on that page, as ``page: anchor: text``; read from the files, no browser."""
  parsed: dict[pathlib.Path, _Anchors] = {}

  def anchors(path: pathlib.Path) -> _Anchors:
    if path not in parsed:
      parsed[path] = _Anchors()
      parsed[path].feed(path.read_text(encoding="utf-8"))
    return parsed[path]

  out = []
  for page in pages:
    for href in anchors(page).hrefs:
      url = urlsplit(href)
      if url.scheme or url.netloc or not url.fragment:
        continue
      target = (page.parent / url.path).resolve() if url.path else page.resolve()
      if not target.is_file():
        continue
      frag = unquote(url.fragment)
      if frag not in anchors(target).ids:
        where = "on this page" if target == page.resolve() else f"in {url.path}"
        out.append(f"{page.name}: anchor: link {href}: no element with id {frag!r} {where}")
  return sorted(set(out))


def check(site: pathlib.Path, widths: list[int], chromium: str, only=None) -> list[str]:
  """Every problem of the site's pages at each width, as ``page @WIDTHpx: kind: text``."""
  pages = pages_of(site, only)
  problems = link_target_problems(site, pages)
  with tempfile.TemporaryDirectory(prefix="jitr-docs-layout-") as profile:
    browser = DevTools(chromium, profile)
    try:
      target = browser.call("Target.createTarget", url="about:blank")["targetId"]
      session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
      browser.call("Page.enable", session)
      for width in widths:
        browser.call(
          "Emulation.setDeviceMetricsOverride",
          session,
          width=width,
          height=HEIGHT,
          deviceScaleFactor=1,
          mobile=False,
        )
        for page in pages:
          browser.call("Page.navigate", session, url=page.resolve().as_uri())
          browser.wait_for("Page.loadEventFired", session)
          result = browser.call(
            "Runtime.evaluate",
            session,
            timeout=300,
            expression=CHECK_JS,
            awaitPromise=True,
            returnByValue=True,
          )
          if "exceptionDetails" in result:
            raise RuntimeError(f"{page.name}: {result['exceptionDetails']}")
          problems += [f"{page.name} @{width}px: {p}" for p in result["result"]["value"]]
    finally:
      browser.close()
  return problems


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("html", nargs="?", type=pathlib.Path, help="the built site's folder")
  parser.add_argument("--widths", default="1280,760", help="viewport widths in px")
  parser.add_argument("--build", action="store_true", help="build the site first")
  parser.add_argument("--pages", default="", help="only these pages (api.html,...)")
  parser.add_argument("--chromium", help="the browser's executable")
  args = parser.parse_args(argv)
  chromium = find_chromium(args.chromium)
  if chromium is None:
    print("no Chromium found: apt-get install chromium, or pass --chromium", file=sys.stderr)
    return 2
  site = args.html or DEFAULT_HTML
  if args.build or args.html is None:
    print(f"building the site into {site}", file=sys.stderr)
    build_site(site)
  if not (site / "index.html").is_file():
    print(f"no site in {site} (no index.html)", file=sys.stderr)
    return 2
  widths = [int(w) for w in args.widths.split(",")]
  only = [p for p in args.pages.split(",") if p]
  start = time.monotonic()
  try:
    problems = check(site, widths, chromium, only)
  except (RuntimeError, TimeoutError) as err:
    print(f"the browser check did not run ({chromium}): {err}", file=sys.stderr)
    return 2
  for line in problems:
    print(line)
  n = len(pages_of(site, only))
  print(
    f"{len(problems)} problem(s) on {n} page(s) at {', '.join(map(str, widths))} px "
    f"({time.monotonic() - start:.0f} s)",
    file=sys.stderr,
  )
  return 1 if problems else 0


if __name__ == "__main__":
  sys.exit(main())
