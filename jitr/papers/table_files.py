"""A comparison (:func:`jitr.papers.comparison.compare`) as files: ``NAME.md`` (a Markdown
table: per published row its printed numbers, an imported official checkpoint's scores
where given, jitr's mean ± std over seeds and the differences), ``NAME.json`` (the
comparison itself) and ``NAME.png`` (one panel per metric: the printed value, the
official checkpoint's, and jitr's mean with its ±std bar, a row per published row).

The files depend on the comparison alone (no date, no timing; PNG metadata without
matplotlib's version), so writing the same comparison again gives the same bytes.
The three are replaced together or not at all (:func:`jitr.fileio.write_files_together`:
each written under a temporary name first, renamed only when all three were written), so
a full disk never leaves a new ``.md`` beside an old ``.png``.
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Mapping
from typing import Any

from jitr import fileio
from jitr.figures import pyplot, save_png
from jitr.papers.published import PROTOCOLS

# savefig's options: the same bytes for the same comparison (no matplotlib version)
PNG_OPTIONS = {"dpi": 100, "metadata": {"Software": None}}


def _number(value: float | None, decimals: int = 2) -> str:
  """``value`` to ``decimals``; a dash for none (``None``, or NaN: not reached)."""
  return "–" if value is None or math.isnan(value) else f"{value:.{decimals}f}"


def _signed(value: float | None, decimals: int = 2) -> str:
  return "–" if value is None or math.isnan(value) else f"{value:+.{decimals}f}"


def markdown(comparison: Mapping[str, Any]) -> str:
  """The comparison as a Markdown page: a heading, the caption, the protocol, one table
  with three lines per published row (paper, jitr mean ± std over N seeds, difference),
  each number with the table's ``decimals``."""
  metrics = comparison["metrics"]
  d = comparison.get("decimals", 2)
  lines = [
    f"# {comparison['table']}: {comparison['paper']}, {comparison['printed_as']}",
    "",
    comparison["caption"],
    "",
    f"Scored on {PROTOCOLS[comparison['protocol']].words}. Published numbers from "
    f"{comparison['source']}.",
    "",
    "| row | | " + " | ".join(metrics) + " |",
    "|---|---|" + "---:|" * len(metrics),
  ]
  for row in comparison["rows"]:
    cells = row["metrics"]
    lines.append(
      f"| {row['label']} | paper | "
      + " | ".join(_number(cells[m]["published"], d) for m in metrics)
      + " |"
    )
    if row["official_checkpoint"]:
      lines.append(
        "| | official checkpoint | "
        + " | ".join(_number(cells[m]["official_checkpoint"], d) for m in metrics)
        + " |"
      )
      lines.append(
        "| | its difference | "
        + " | ".join(_signed(cells[m].get("official_difference"), d) for m in metrics)
        + " |"
      )
    seeds = row["scored_seeds"]
    if not row["runs"]:
      lines.append("| | jitr | " + " | ".join("not run" for _ in metrics) + " |")
      continue
    if seeds == 0:
      lines.append("| | jitr | " + " | ".join("no seed yet" for _ in metrics) + " |")
      continue
    lines.append(
      f"| | jitr ({seeds} seed{'s' if seeds > 1 else ''}) | "
      + " | ".join(
        f"{_number(cells[m]['mean'], d)} ± {_number(cells[m]['std'], d)}" for m in metrics
      )
      + " |"
    )
    lines.append(
      "| | difference | "
      + " | ".join(_signed(cells[m].get("difference"), d) for m in metrics)
      + " |"
    )
  notes = [f"- {row['label']}: {row['notes']}" for row in comparison["rows"] if row["notes"]]
  if notes:
    lines += ["", "Notes:", "", *notes]
  return "\n".join(lines) + "\n"


def figure(comparison: Mapping[str, Any]) -> Any:
  """One panel per metric: for each published row (top to bottom) the printed value (open
  circle), an official checkpoint's (cross) and jitr's mean (filled dot) with a ±std bar;
  a matplotlib figure (the caller closes it)."""
  plt = pyplot()
  metrics = comparison["metrics"]
  rows = comparison["rows"]
  labels = [row["label"] for row in rows]
  fig, axes = plt.subplots(
    1, len(metrics), figsize=(2.2 * len(metrics) + 2.5, 0.45 * len(rows) + 1.6), sharey=True
  )
  axes = list(axes) if len(metrics) > 1 else [axes]
  ys = list(range(len(rows)))[::-1]
  for ax, metric in zip(axes, metrics):
    for y, row in zip(ys, rows):
      cell = row["metrics"][metric]
      if cell["published"] is not None:
        ax.plot(cell["published"], y, "o", mfc="none", mec="tab:blue", ms=7)
      if "official_checkpoint" in cell:
        ax.plot(cell["official_checkpoint"], y, "x", color="tab:green", ms=6)
      if "mean" in cell:
        ax.errorbar(cell["mean"], y, xerr=cell["std"], fmt="o", color="tab:orange", ms=4)
    ax.set_title(metric, fontsize=9)
    ax.tick_params(labelsize=8)
    ax.grid(axis="x", alpha=0.3)
  axes[0].set_yticks(ys, labels)
  axes[0].plot([], [], "o", mfc="none", mec="tab:blue", label="paper")
  axes[0].plot([], [], "o", color="tab:orange", label="jitr mean ± std")
  if any(row["official_checkpoint"] for row in rows):
    axes[0].plot([], [], "x", color="tab:green", label="official checkpoint")
  fig.legend(loc="lower center", ncol=3, fontsize=8, frameon=False)
  fig.suptitle(f"{comparison['table']}: {comparison['paper']}, {comparison['printed_as']}")
  fig.tight_layout(rect=(0, 0.08, 1, 1))
  return fig


def plot(comparison: Mapping[str, Any], path: str) -> None:
  """:func:`figure` of ``comparison`` written to ``path`` (PNG, whole or not at all)."""
  save_png(figure(comparison), path, **PNG_OPTIONS)


def png_bytes(comparison: Mapping[str, Any]) -> bytes:
  """The PNG file of :func:`figure` of ``comparison``, made in memory."""
  fig = figure(comparison)
  buffer = io.BytesIO()
  try:
    fig.savefig(buffer, format="png", **PNG_OPTIONS)
  finally:
    pyplot().close(fig)
  return buffer.getvalue()


def table_files(comparison: Mapping[str, Any], folder: str) -> dict[str, str]:
  """``{"md"|"json"|"png": path}``: where the files of ``comparison`` go in ``folder``."""
  base = os.path.join(folder, comparison["table"])
  return {"md": base + ".md", "json": base + ".json", "png": base + ".png"}


def write_table_files(comparison: Mapping[str, Any], folder: str) -> dict[str, str]:
  """Writes ``NAME.md``, ``NAME.json`` and ``NAME.png`` of ``comparison`` into ``folder``
  (made when missing; a folder or a gs:// URL), the three replaced together or not at all
  (module docstring); returns ``{"md"|"json"|"png": path}``."""
  files = table_files(comparison, folder)
  contents = {
    files["md"]: markdown(comparison).encode("utf-8"),
    files["json"]: (json.dumps(comparison, indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
    files["png"]: png_bytes(comparison),
  }
  fileio.write_files_together(contents)
  return files
