"""PNG plots of a metrics dict and of retrieved examples (matplotlib, Agg).

* :func:`plot_curves` -- a metric over K (``R@K``, ``NDCG@K``, ...) for every
  protocol / direction in the dict.
* :func:`plot_query_panel` -- for a few queries, the query (image or caption)
  and its top retrieved items, each annotated with its relevance; images and
  captions are given as arrays, strings or callables returning them, so the
  app can feed jitr_shapes renders without this module knowing about data.

Files are written atomically (temp name + rename).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jitr.figures import pyplot, save_png

__all__ = ["curve_series", "plot_curves", "plot_query_panel", "QueryExample"]


# the plots' PNG settings
PNG = {"dpi": 110, "bbox_inches": "tight"}


def curve_series(
  metrics: Mapping[str, float], name: str
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
  """``{"proto/dir": (Ks, values)}`` for keys ``proto/dir/{name}@K``."""
  pat = re.compile(r"^(?P<series>[^/]+/(?:i2t|t2i))/" + re.escape(name) + r"@(?P<k>\d+)$")
  found: dict[str, list[tuple[int, float]]] = {}
  for key, v in metrics.items():
    m = pat.match(key)
    if m:
      found.setdefault(m.group("series"), []).append((int(m.group("k")), float(v)))
  out = {}
  for series, pts in found.items():
    pts.sort()
    out[series] = (np.array([k for k, _ in pts]), np.array([v for _, v in pts]))
  return out


def plot_curves(
  metrics: Mapping[str, float], name: str, path: str, *, title: str | None = None
) -> bool:
  """Plots ``{name}@K`` against K (log x axis) for every protocol/direction.

  Returns False (and writes nothing) when the dict has no such keys.
  """
  series = curve_series(metrics, name)
  if not series:
    return False
  plt = pyplot()
  fig, ax = plt.subplots(figsize=(6.4, 4.2))
  for label, (ks, vals) in sorted(series.items()):
    style = "-" if label.endswith("i2t") else "--"
    ax.plot(ks, vals, style, marker="o", markersize=3, label=label)
  ax.set_xscale("log")
  allk = sorted({int(k) for ks, _ in series.values() for k in ks})
  ax.set_xticks(allk)
  ax.set_xticklabels([str(k) for k in allk])
  ax.set_xlabel("K")
  ax.set_ylabel(f"{name}@K")
  ax.grid(True, alpha=0.3)
  ax.legend(fontsize=7, ncol=2)
  ax.set_title(title or f"{name}@K")
  save_png(fig, path, **PNG)
  return True


Content = Any  # an HxW[x3] array, a string, or a zero-argument callable returning one


class QueryExample:
  """One row of a query panel.

  Attributes:
    query: the query image (``(H, W)`` / ``(H, W, 3)`` array) or caption
      (str), or a callable returning it.
    retrieved: its top retrieved items (same forms), best first.
    relevance: the relevance of each retrieved item (shown under it).
    positive: optional bools, annotated positives (drawn with a green frame).
    title: optional label of the query.
  """

  def __init__(
    self,
    query: Content,
    retrieved: Sequence[Content],
    relevance: Sequence[float],
    *,
    positive: Sequence[bool] | None = None,
    title: str | None = None,
  ):
    if len(relevance) != len(retrieved):
      raise ValueError(
        f"QueryExample: `relevance` has {len(relevance)} entries for "
        f"{len(retrieved)} `retrieved` items"
      )
    if positive is not None and len(positive) != len(retrieved):
      raise ValueError(
        f"QueryExample: `positive` has {len(positive)} entries for "
        f"{len(retrieved)} `retrieved` items"
      )
    self.query = query
    self.retrieved = list(retrieved)
    self.relevance = [float(r) for r in relevance]
    self.positive = list(positive) if positive is not None else [False] * len(retrieved)
    self.title = title


def _resolve(item: Content):
  return item() if callable(item) else item


def _draw(ax, content, *, frame: str | None = None) -> None:
  ax.set_xticks([])
  ax.set_yticks([])
  if isinstance(content, str):
    ax.text(
      0.5,
      0.5,
      textwrap.fill(content, 22),
      ha="center",
      va="center",
      fontsize=7,
      wrap=True,
      transform=ax.transAxes,
    )
  else:
    arr = np.asarray(content)
    if arr.ndim not in (2, 3):
      raise ValueError(f"query panel: an image must be (H, W) or (H, W, C), got shape {arr.shape}")
    if arr.dtype.kind == "f":
      arr = np.clip(arr, 0.0, 1.0)
    ax.imshow(arr, cmap="gray" if arr.ndim == 2 else None, interpolation="nearest")
  if frame:
    for side in ax.spines.values():
      side.set_edgecolor(frame)
      side.set_linewidth(3)


def plot_query_panel(
  examples: Sequence[QueryExample], path: str, *, title: str | None = None
) -> None:
  """One row per query: the query, then its retrieved items with relevance."""
  if not examples:
    raise ValueError("`examples` must hold at least one QueryExample")
  n_cols = 1 + max(len(e.retrieved) for e in examples)
  plt = pyplot()
  fig, axes = plt.subplots(
    len(examples), n_cols, figsize=(1.7 * n_cols, 1.9 * len(examples)), squeeze=False
  )
  for r, ex in enumerate(examples):
    ax = axes[r, 0]
    _draw(ax, _resolve(ex.query), frame="black")
    ax.set_title(ex.title or f"query {r}", fontsize=8, fontweight="bold")
    for c in range(1, n_cols):
      ax = axes[r, c]
      if c - 1 >= len(ex.retrieved):
        ax.axis("off")
        continue
      _draw(ax, _resolve(ex.retrieved[c - 1]), frame="tab:green" if ex.positive[c - 1] else None)
      ax.set_title(f"#{c}  rel {ex.relevance[c - 1]:.2f}", fontsize=7)
  if title:
    fig.suptitle(title)
  fig.tight_layout()
  save_png(fig, path, **PNG)
