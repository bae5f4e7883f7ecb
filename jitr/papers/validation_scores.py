"""A row of a ``validation`` table scored from its runs' validation histories: LSEH's
Table 3 (:mod:`!jitr.papers.lseh_efficiency`), the epochs LMH1, LMH2 and LSEH need to
reach the LMH runs' best validation M-Recall."""

from __future__ import annotations

import math
from collections.abc import Sequence

from jitr.training.validation_history import (
  best_validation,
  epochs_to_reach,
  history_path,
  read_history,
)

# M-Recall: the mean of the six Recall@K, from the validation's RSUM
RSUM = "full/rsum"


def m_recall(history: Sequence[dict]) -> list[dict]:
  """``history`` with each validation's metrics holding ``mR = rsum / 6``."""
  return [
    {**v, "metrics": {"mR": v["metrics"][RSUM] / 6 if v["metrics"].get(RSUM) is not None else None}}
    for v in history
  ]


def efficiency_scores(workdirs: Sequence[str]) -> dict[str, float]:
  """``{"validation/lmhN/COLUMN": value}`` of the runs LMH1, LMH2, LSEH in ``workdirs``
  (that order): for N = 1, 2, ``mR`` and ``epochs`` (the LMH run's best validation M-Recall
  and its epoch), ``lseh_epochs`` (the LSEH run's first epoch at or above it; NaN when it
  never is), ``difference`` (``lseh_epochs − epochs``) and ``difference_pct`` (``100 ·
  difference / epochs``). A run without validations is refused in one line."""
  histories = []
  for workdir in workdirs:
    path = history_path(workdir)
    history = read_history(path)
    if not history:
      raise ValueError(f"{path}: no validations; expected the run's validation history")
    histories.append(m_recall(history))
  *lmhs, lseh = histories
  out = {}
  for name, lmh in zip(("lmh1", "lmh2"), lmhs, strict=True):
    best, epochs = best_validation(lmh, "mR")
    reached = epochs_to_reach(lseh, "mR", best)
    lseh_epochs = math.nan if reached is None else reached
    difference = lseh_epochs - epochs
    values = {
      "mR": best,
      "epochs": epochs,
      "lseh_epochs": lseh_epochs,
      "difference": difference,
      "difference_pct": 100 * difference / epochs,
    }
    out.update({f"validation/{name}/{k}": v for k, v in values.items()})
  return out
