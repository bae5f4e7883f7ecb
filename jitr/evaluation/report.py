"""Writing a metrics dict: ``metrics.json`` (atomically), a markdown table, plots.

:func:`write_report` is what ``jitr-eval`` calls after
:func:`~jitr.evaluation.suite.evaluate_retrieval`: it writes

* ``metrics.json`` -- the flat dict, keys sorted (temp file + rename, so an
  existing file is never left half-written),
* ``metrics.md`` -- a markdown table per protocol (rows = metrics, columns =
  directions),
* ``recall_at_k.png`` and ``ndcg_at_k.png`` -- curves over K (when the dict
  has those keys; needs matplotlib).

:func:`building` makes a report folder all or nothing: the report is written into a
temporary folder that replaces the folder whole once complete
(:func:`jitr.folder_swap.atomic_folder`), so a failed or interrupted write leaves the previous
report as it was and never one evaluation's metrics beside another's plots. On a bucket,
where a rename is a copy, the folder is built locally and uploaded with ``metrics.json``
last (deleted first): an interrupted upload leaves no ``metrics.json`` beside files that
are not its own.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Iterator, Mapping

from jitr import fileio, paths
from jitr.evaluation import plots as plots_lib
from jitr.fileio import write_text_atomic
from jitr.folder_swap import atomic_folder

__all__ = [
  "METRICS_NAME",
  "building",
  "markdown_table",
  "split_key",
  "write_json_atomic",
  "write_report",
  "write_text_atomic",
]

METRICS_NAME = "metrics.json"
"""The report's metrics file, written last: a report folder without it is incomplete."""

_KEY = re.compile(r"^(?:(?P<proto>[^/]+)/)?(?:(?P<dir>i2t|t2i)/)?(?P<metric>[^/]+)$")


def split_key(key: str) -> tuple[str, str | None, str]:
  """``"full/i2t/R@1"`` -> ``("full", "i2t", "R@1")``; ``"full/rsum"`` ->
  ``("full", None, "rsum")``; a bare ``"rsum"`` -> ``("summary", None, "rsum")``."""
  m = _KEY.match(key)
  if not m:
    raise ValueError(f"metric key {key!r} is not '[protocol/][direction/]metric'")
  return m.group("proto") or "summary", m.group("dir"), m.group("metric")


def _json_value(key: str, v) -> float | None:
  try:
    f = float(v)
  except (TypeError, ValueError) as e:
    raise ValueError(f"metrics[{key!r}] must be a number, got {v!r}") from e
  return None if math.isnan(f) else f


def write_json_atomic(path: str, metrics: Mapping[str, float]) -> None:
  """``metrics`` as sorted JSON (NaN -> null), written atomically."""
  data = {str(k): _json_value(k, v) for k, v in sorted(metrics.items())}
  fileio.write_json_atomic(path, data, indent=2, sort_keys=True, allow_nan=False)


def _metric_order(name: str) -> tuple:
  m = re.match(r"^(.*?)@(\d+)$", name)
  if m:
    return (m.group(1), int(m.group(2)))
  return (name, -1)


def _fmt(v: float, digits: int) -> str:
  if v is None or (isinstance(v, float) and math.isnan(v)):
    return "–"
  return f"{v:.{digits}f}"


def markdown_table(
  metrics: Mapping[str, float], *, digits: int = 2, title: str | None = None
) -> str:
  """One markdown table per protocol: rows = metrics, columns i2t / t2i / all."""
  protos: dict[str, dict[str, dict[str, float]]] = {}
  for key, v in metrics.items():
    proto, d, metric = split_key(key)
    protos.setdefault(proto, {}).setdefault(metric, {})[d or "all"] = v
  lines = []
  if title:
    lines += [f"# {title}", ""]
  for proto in protos:
    rows = protos[proto]
    cols = [c for c in ("i2t", "t2i", "all") if any(c in r for r in rows.values())]
    lines.append(f"## {proto}")
    lines.append("")
    lines.append("| metric | " + " | ".join(cols) + " |")
    lines.append("|---|" + "---:|" * len(cols))
    for metric in sorted(rows, key=_metric_order):
      cells = [_fmt(rows[metric].get(c), digits) if c in rows[metric] else "" for c in cols]
      lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    lines.append("")
  return "\n".join(lines)


def write_report(
  workdir: str, metrics: Mapping[str, float], *, title: str | None = None, plots: bool = True
) -> dict[str, str]:
  """Writes ``metrics.json``, ``metrics.md`` and the curve plots to ``workdir``.

  Returns ``{"json": path, "markdown": path, "recall_plot": path, ...}`` for the
  files written (plots only when the metrics hold curve keys).
  """
  paths.makedirs(workdir)
  written = {
    "json": os.path.join(workdir, METRICS_NAME),
    "markdown": os.path.join(workdir, "metrics.md"),
  }
  write_json_atomic(written["json"], metrics)
  write_text_atomic(written["markdown"], markdown_table(metrics, title=title))
  if plots:
    p = os.path.join(workdir, "recall_at_k.png")
    if plots_lib.plot_curves(metrics, "R", p, title="Recall@K"):
      written["recall_plot"] = p
    p = os.path.join(workdir, "ndcg_at_k.png")
    if plots_lib.plot_curves(metrics, "NDCG", p, title="NDCG@K"):
      written["ndcg_plot"] = p
  return written


@contextlib.contextmanager
def building(folder: str) -> Iterator[str]:
  """Yields an empty temporary folder to write a report into (:func:`write_report`, and
  whatever else belongs to it); when the block completes it becomes ``folder``, replacing
  the previous report whole; when the block raises, ``folder`` is left as it was
  (:func:`jitr.folder_swap.atomic_folder`, :data:`METRICS_NAME` written last on a bucket)."""
  with atomic_folder(folder, last=METRICS_NAME) as tmp:
    yield tmp
