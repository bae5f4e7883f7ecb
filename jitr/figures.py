"""matplotlib for jitr's PNG files: :func:`pyplot` on the non-interactive Agg backend
(no display needed; a backend the user chose first is kept) and :func:`save_png`, an
atomic write (:func:`jitr.fileio.atomic_path`) that closes the figure.

A shared utility (like :mod:`jitr.fileio`): any jitr subpackage may import it, and it
imports neither JAX nor matplotlib until called (``jitr-tables --help`` stays quick).
"""

from __future__ import annotations

from typing import Any

from jitr import fileio


def pyplot() -> Any:
  """``matplotlib.pyplot``, with the Agg backend unless one was already chosen."""
  import matplotlib as mpl

  mpl.use("Agg", force=False)
  import matplotlib.pyplot as plt

  return plt


def save_png(fig: Any, path: str, **savefig: Any) -> None:
  """Writes ``fig`` to ``path`` as PNG (``savefig``: matplotlib's ``savefig`` options,
  e.g. ``dpi``), whole or not at all, then closes it."""
  try:
    with fileio.atomic_path(path) as tmp:
      fig.savefig(tmp, format="png", **savefig)
  finally:
    pyplot().close(fig)
