"""The rows and the markdown table of ``jitr-relevance-quality`` (estimates against the truth).

For an estimated relevance matrix and each calibration chain
(:mod:`jitr.losses.calibration`; image queries calibrate its rows, caption queries its
columns), :func:`quality_rows` reports (fractions; :mod:`jitr.evaluation.relevance_quality`):

* Kendall tau-b over all (image, caption) pairs with the exact relevance, on the image-row
  and caption-column calibrated matrices (equal unless the chain is per query; a strictly
  increasing elementwise chain keeps the uncalibrated tau);
* NDCG@10 and mAP@R of ranking each query's gallery by the estimate (i2t, t2i);
* MAE and gain@0 (mean ``2^r − 1`` of exact-0 pairs), on the image-row matrix.

:func:`format_table` prints them x100 but MAE and gain@0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from jitr.evaluation.relevance_quality import ranking_quality, value_errors
from jitr.losses.calibration import parse_calibration
from jitr.relevance.agreement import kendall_tau

COLUMNS = (
  ("tau_b/i2t", "τ-b i2t"),
  ("tau_b/t2i", "τ-b t2i"),
  ("NDCG@10/i2t", "NDCG@10 i2t"),
  ("NDCG@10/t2i", "NDCG@10 t2i"),
  ("mAP@R/i2t", "mAP@R i2t"),
  ("mAP@R/t2i", "mAP@R t2i"),
  ("MAE", "MAE"),
  ("gain@0", "gain@0"),
)
PERCENT = {"tau_b/i2t", "tau_b/t2i", "NDCG@10/i2t", "NDCG@10/t2i", "mAP@R/i2t", "mAP@R/t2i"}


def quality_rows(
  estimated: np.ndarray,
  exact: np.ndarray,
  positives: np.ndarray,
  calibrations: Sequence[str],
  *,
  log: Callable[[str], None] = print,
) -> list[dict]:
  """One row per calibration chain: the metrics of the module docstring (fractions)."""
  flat_exact = {"i2t": np.ravel(exact), "t2i": np.ravel(exact.T)}
  tau_of_uncalibrated: dict[str, float] = {}
  rows = []
  for spec in calibrations:
    chain = parse_calibration(spec)
    mats = {
      "i2t": np.asarray(chain(estimated, positives=positives)),
      "t2i": np.asarray(chain(estimated.T, positives=positives.T)),
    }
    row = {"calibration": chain.spec or "none"}
    for d in ("i2t", "t2i"):
      if chain.strict and "i2t" in tau_of_uncalibrated:
        row[f"tau_b/{d}"] = tau_of_uncalibrated["i2t"]  # an order-keeping map: the same tau
      elif d == "t2i" and not chain.per_query:
        row[f"tau_b/{d}"] = row["tau_b/i2t"]  # elementwise: the same pairs, the same values
      else:
        log(f"  tau-b ({row['calibration']}, {d})")
        row[f"tau_b/{d}"] = kendall_tau(np.ravel(mats[d]), flat_exact[d], "b")
      if not chain:
        tau_of_uncalibrated[d] = row[f"tau_b/{d}"]
      ranks = ranking_quality(mats[d], exact if d == "i2t" else exact.T, ks=(10,))
      row[f"NDCG@10/{d}"], row[f"mAP@R/{d}"] = ranks["NDCG@10"], ranks["mAP@R"]
    row.update(value_errors(mats["i2t"], exact, positives))
    rows.append(row)
  return rows


def format_table(rows: Sequence[dict]) -> str:
  """The rows as one markdown table (x100 for tau, NDCG and mAP@R)."""
  head = ["split", "estimator", "calibration"] + [title for _, title in COLUMNS]
  lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * len(COLUMNS)]
  for r in rows:
    estimator = r["estimator"].replace("|", "\\|")  # a combination's parts, not a new cell
    cells = [r["split"], estimator, f"`{r['calibration']}`"]
    for key, _ in COLUMNS:
      v = r[key]
      cells.append(f"{100 * v:.1f}" if key in PERCENT else f"{v:.3f}")
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)
