"""LSEH's Table 3 (Gong and Cosma): the training efficiency of LSEH against LMH1 and LMH2.

For each network and dataset, ``M-Recall_LMH`` is the best validation M-Recall (``rsum /
6``) of the LMH run, ``epochs_LMH`` the epoch of the validation that first reached it,
``epochs_LSEH`` the epoch at which the LSEH run's validation first reached at least
``M-Recall_LMH``, and (Eq. 10) ``Difference = epochs_LSEH − epochs_LMH`` and
``Difference % = 100 · Difference / epochs_LMH``. The runs are Tables 4-7's (validated
every 500 batches, SGRAF every 1,000: ``jitr.papers.lseh.VAL_STEPS``); each row is scored
from their validation histories (``<workdir>/validation.json``,
:mod:`!jitr.papers.validation_scores`), an LSEH run that never reaches ``M-Recall_LMH``
gives no number (``NaN``). Tables ``lseh.table3.f30k``, ``.coco`` (validated on COCO's
``dev`` split, as every COCO run) and ``.iaprtc12``; each row's runs are LMH1's, LMH2's
and LSEH's, in that order; the ``Average`` rows are printed reference (the mean of the
rows above).
"""

from __future__ import annotations

from jitr.papers.lseh import DATASETS, NETWORKS, PAPER, SOURCE, lseh_run
from jitr.papers.published import Row, Table

# per comparison (LMH1, LMH2): M-Recall_LMH, epochs_LMH, epochs_LSEH, Difference, Difference %
COLUMNS = ("mR", "epochs", "lseh_epochs", "difference", "difference_pct")
METRICS = tuple(f"{lmh}/{c}" for lmh in ("lmh1", "lmh2") for c in COLUMNS)
AVERAGE_METRICS = tuple(f"{lmh}/{c}" for lmh in ("lmh1", "lmh2") for c in COLUMNS[3:])

# the rows as printed, network by network in NETWORKS' order
TABLE3 = {
  "f30k": (
    (57.1, 6.0, 1.8, -4.2, -70.0, 59.1, 8.4, 2.0, -6.4, -76.2),
    (78.0, 12.0, 4.9, -7.1, -59.2, 79.4, 11.5, 5.3, -6.2, -53.9),
    (81.4, 29.0, 13.9, -15.1, -52.1, 80.9, 29.0, 10.0, -19.0, -65.5),
    (81.0, 38.6, 20.1, -18.5, -47.9, 1.6, 7.0, 0.8, -6.2, -88.6),
    (85.9, 16.8, 10.6, -6.2, -36.9, 81.8, 24.0, 2.6, -21.4, -89.2),
  ),
  "coco": (
    (72.5, 2.9, 2.3, -0.6, -20.7, 21.3, 16.0, 0.2, -15.8, -98.8),
    (86.8, 15.6, 6.6, -9.0, -57.7, 86.7, 10.2, 6.4, -3.8, -37.3),
    (88.0, 19.8, 8.0, -11.8, -59.6, 88.0, 14.8, 8.0, -6.8, -45.9),
    (88.4, 17.8, 8.1, -9.7, -54.5, 87.8, 14.0, 6.3, -7.7, -55.0),
    (89.4, 16.9, 13.1, -3.8, -22.5, 89.5, 17.1, 13.1, -4.0, -23.4),
  ),
  "iaprtc12": (
    (50.0, 19.0, 3.7, -15.3, -80.5, 9.3, 16.0, 2.0, -14.0, -87.5),
    (86.7, 36.0, 21.0, -15.0, -41.7, 87.2, 31.0, 22.0, -9.0, -29.0),
    (87.3, 29.0, 16.0, -13.0, -44.8, 16.8, 19.2, 1.0, -18.2, -94.8),
    (87.1, 39.6, 19.0, -20.6, -52.0, 10.9, 40.0, 1.0, -39.0, -97.5),
    (92.7, 17.0, 13.0, -4.0, -23.5, 92.5, 20.0, 12.0, -8.0, -40.0),
  ),
}
# the Average rows: Difference and Difference % of each comparison
AVERAGES = {
  "f30k": (-10.2, -53.2, -11.8, -74.7),
  "coco": (-7.0, -43.0, -7.6, -52.1),
  "iaprtc12": (-13.6, -48.5, -17.6, -69.8),
}
PRINTED = {"f30k": "Flickr30K", "coco": "MS-COCO", "iaprtc12": "IAPR TC-12"}
AVERAGE = "the mean of the five networks' rows above: printed for reference"


def _table(data: str) -> Table:
  rows = tuple(
    Row(
      network,
      dict(zip(METRICS, printed, strict=True)),
      tuple(lseh_run(model, loss, data) for loss in ("LMH1", "LMH2", "LSEH")),
    )
    for (network, model), printed in zip(NETWORKS.items(), TABLE3[data], strict=True)
  )
  average = Row("Average", dict(zip(AVERAGE_METRICS, AVERAGES[data], strict=True)), (), AVERAGE)
  return Table(
    f"lseh.table3.{data}",
    PAPER,
    "Table 3",
    f"Training efficiency on {PRINTED[data]}: the epochs LMH1 / LMH2 need to reach their "
    "best validation M-Recall and the epochs LSEH needs to reach it (Eq. 10's Difference).",
    "validation",
    METRICS,
    (*rows, average),
    f"{SOURCE}, Table 3",
  )


TABLES = tuple(_table(data) for data in DATASETS)
"""Table 3 on each dataset."""
