"""SAM's tables (Biten, Mafla et al., *Is An Image Worth Five Sentences?*), as printed.

* Table 3 (``sam.table3.f30k``, ``.coco1k``, ``.coco5k``): VSRN, CVSE and SGR trained with
  their official code (†) and with SAM; Recall@K, the Normalized Cumulative Semantic score
  NCS@K (``N@K``, the annotated positives kept in both rankings), Rsum and Nsum.
* Table 2 (``sam.table2.f30k_10``, ``.f30k_25``, ``.coco1k_3``, ``.coco1k_5``): CVSE and SGR
  with and without SAM trained on 10 % / 25 % of Flickr30K's training images and 3 % / 5 %
  of COCO's (``config.train_fraction``: the same images for every row), the same columns.
* Tables 4 and 5 (``sam.table4.f30k``, ``.coco1k``, ``sam.table5.f30k``): CVSE + SAM with
  τ ∈ {3, 5, 10}, the negative taken by soft (SN: the furthest in the batch), random (RS)
  or hard (HN) sampling, and the triplet kept or SAM alone; Nsum, Nsum(N) (the NCS with
  the annotated positives removed) and Rsum.
* Table 1 (``sam.table1.crisscrossed``): the Pearson correlation of Recall and NCS with
  Criss-Crossed's human judgements, printed reference (the judgements are not jitr data).

Every row of Tables 2-5 is a jitr run: ``configs/paper.py:DATA,MODEL,triplet`` (†) or
``...,sam`` (SAM: the CIDEr-D margin, τ 5, hard negatives, the triplet kept), with the
row's settings as overrides. The paper computes NCS with SPICE (``semantic="topk:spice"``:
SPICE scores of the test split's pairs, computed elsewhere and written with
``jitr-precompute --scores=spice=FILE``, see docs/relevance.md). Flickr30K and COCO 5K
are scored on the whole test split with jitr's protocol (``semantic``), COCO 1K on each of
the five folds, averaged (``semantic_folds``).
"""

from __future__ import annotations

from collections.abc import Sequence

from jitr.papers.published import NCS_METRICS, RSUM_METRICS, Row, Run, Table

PAPER = "SAM (Biten, Mafla et al.)"
SOURCE = "Biten, Mafla et al., Is An Image Worth Five Sentences?"
METRICS = (*RSUM_METRICS, *NCS_METRICS, "nsum")
# printed label -> (configs/paper.py MODEL, LOSS)
NETWORKS = {
  "VSRN [21]†": ("vsrn", "triplet"),
  "VSRN + SAM": ("vsrn", "sam"),
  "CVSE [41]†": ("cvse", "triplet"),
  "CVSE + SAM": ("cvse", "sam"),
  "SGR [7]†": ("sgr", "triplet"),
  "SGR + SAM": ("sgr", "sam"),
}
TABLE2_NETWORKS = {label: NETWORKS[label] for label in list(NETWORKS)[2:]}
# (table, row) -> what the paper's own arithmetic gets wrong there (kept as printed)
ARITHMETIC_OFF = {
  ("sam.table3.f30k", "CVSE + SAM"): (
    "the paper's own arithmetic is off here: its six N@K sum to 369.0, the Nsum printed is 387.9"
  ),
}
CAPTION = "VSRN, CVSE and SGR with their official code (†) and with SAM: Recall@K and SPICE NCS@K"
# a dataset's part -> (how the paper prints it, protocol, configs/paper.py DATA)
PARTS = {
  "f30k": ("Flickr30K's test split (1,000 images)", "semantic", "f30k"),
  "coco1k": ("COCO 1K (the mean of the five folds)", "semantic_folds", "coco"),
  "coco5k": ("COCO 5K", "semantic", "coco"),
}


def sam_run(data: str, model: str, loss: str, overrides: Sequence[tuple[str, str]] = ()) -> Run:
  """The run ``configs/paper.py:DATA,MODEL,LOSS`` with ``overrides``, named by all of them
  (``f30k_cvse_sam_tau3_soft_alone``; Table 3's rows, without overrides, share the plain
  ``DATA_MODEL_LOSS`` runs)."""
  name = "_".join((data, model, loss, *(_short(field, value) for field, value in overrides)))
  return Run(name, f"{data},{model},{loss}", tuple(overrides))


def _short(field: str, value: str) -> str:
  """An override in a run name: ``train_fraction=0.1`` -> ``train0.1``; the SAM term's
  ``temperature=3.0`` -> ``tau3``, ``sampling=soft`` -> ``soft``, ``keep_triplet`` ->
  ``triplet`` (True) or ``alone`` (False)."""
  if field == "train_fraction":
    return f"train{value}"
  setting = field.rsplit(".", 1)[-1]
  if setting == "temperature":
    return f"tau{float(value):g}"
  if setting == "keep_triplet":
    return "triplet" if value == "True" else "alone"
  return value


def _table(name: str, table: str, caption: str, part: str, rows, metrics=METRICS) -> Table:
  """``rows``: ``(label, (MODEL, LOSS), overrides, printed values)``."""
  printed, protocol, data = PARTS[part]
  return Table(
    name,
    PAPER,
    table,
    f"{caption} on {printed}.",
    protocol,
    metrics,
    tuple(
      Row(
        label,
        dict(zip(metrics, values, strict=True)),
        (sam_run(data, model, loss, overrides),),
        ARITHMETIC_OFF.get((name, label), ""),
      )
      for label, (model, loss), overrides, values in rows
    ),
    f"{SOURCE}, {table}",
    semantic="topk:spice",
  )


# Table 3: R@1, 5, 10 both ways, Rsum, N@1, 5, 10 both ways, Nsum; in NETWORKS' order
TABLE3 = {
  "f30k": (
    (68.1, 88.4, 93.9, 51.6, 78.3, 85.8, 466.1, 60.3, 62.9, 62.9, 63.2, 58.8, 55.0, 363.4),
    (68.4, 89.7, 94.8, 52.4, 78.7, 86.6, 470.6, 60.2, 62.7, 63.1, 64.1, 59.4, 55.7, 365.2),
    (68.6, 87.7, 92.7, 53.2, 81.1, 88.3, 471.6, 59.0, 63.5, 63.1, 64.1, 59.6, 55.5, 364.9),
    (70.0, 89.2, 93.1, 55.0, 82.6, 89.0, 478.9, 59.6, 64.6, 64.2, 65.5, 59.8, 55.3, 387.9),
    (74.4, 92.9, 96.3, 55.8, 81.1, 87.9, 488.4, 68.1, 65.6, 63.8, 66.0, 58.6, 54.5, 376.7),
    (75.9, 92.4, 96.6, 57.6, 83.1, 89.7, 495.3, 69.4, 66.2, 64.0, 67.5, 59.2, 55.0, 381.4),
  ),
  "coco1k": (
    (72.4, 94.7, 97.8, 61.2, 89.3, 94.9, 510.3, 68.3, 72.1, 68.2, 74.4, 71.1, 66.4, 420.6),
    (74.6, 93.6, 97.5, 61.5, 89.6, 94.9, 511.7, 69.3, 72.2, 68.1, 74.5, 70.9, 66.5, 421.5),
    (77.0, 94.2, 97.3, 64.3, 91.1, 95.9, 519.8, 69.7, 73.3, 69.3, 76.2, 71.4, 67.1, 427.2),
    (79.8, 95.1, 97.7, 67.0, 93.0, 97.3, 529.9, 71.8, 76.3, 71.0, 78.6, 72.9, 69.1, 439.6),
    (79.9, 97.4, 98.3, 63.2, 90.5, 95.4, 524.7, 74.7, 73.1, 67.9, 76.1, 70.7, 67.2, 429.9),
    (80.7, 97.2, 98.6, 63.8, 90.5, 95.9, 526.7, 73.2, 72.9, 67.8, 76.2, 70.9, 67.4, 428.5),
  ),
  "coco5k": (
    (48.4, 78.9, 87.9, 37.2, 67.9, 79.6, 399.9, 55.8, 58.6, 61.2, 60.2, 63.4, 62.8, 362.2),
    (49.1, 79.0, 87.4, 37.5, 68.1, 79.5, 400.6, 56.4, 58.8, 61.7, 60.6, 63.5, 62.9, 363.9),
    (53.1, 79.6, 88.0, 40.5, 72.2, 83.1, 416.5, 57.1, 61.1, 63.2, 62.2, 64.4, 63.4, 371.4),
    (56.4, 82.4, 90.1, 42.3, 73.9, 84.5, 429.6, 59.2, 63.0, 64.5, 63.8, 65.3, 64.4, 380.2),
    (56.0, 83.3, 90.7, 40.1, 69.3, 80.2, 419.6, 60.4, 59.1, 60.4, 61.7, 62.5, 61.6, 366.0),
    (55.7, 83.2, 91.2, 40.5, 69.7, 80.5, 420.8, 59.5, 59.3, 60.4, 62.0, 62.4, 61.4, 365.0),
  ),
}

# Table 2: (name suffix, part, training fraction, how the paper prints it) -> the rows'
# values in TABLE2_NETWORKS' order, columns as Table 3's
TABLE2 = {
  ("f30k_10", "f30k", "0.1", "F-10%"): (
    (13.0, 16.2, 23.9, 12.5, 30.9, 42.2, 138.7, 19.0, 24.4, 28.3, 25.7, 34.0, 36.3, 167.6),
    (34.6, 60.4, 70.9, 23.9, 50.6, 62.8, 303.2, 37.4, 40.2, 44.1, 38.6, 46.3, 47.1, 253.6),
    (0.3, 0.7, 1.3, 0.2, 0.6, 1.1, 4.2, 2.8, 4.2, 5.7, 5.7, 9.7, 11.7, 39.8),
    (37.9, 64.8, 77.5, 26.6, 53.4, 64.4, 324.6, 40.1, 41.0, 44.6, 41.4, 48.1, 48.5, 263.7),
  ),
  ("f30k_25", "f30k", "0.25", "F-25%"): (
    (30.4, 47.5, 59.6, 28.8, 58.1, 69.7, 294.1, 30.8, 39.9, 43.7, 42.4, 48.0, 47.7, 252.5),
    (48.7, 73.2, 81.8, 37.9, 66.2, 76.0, 383.8, 46.2, 49.7, 52.4, 51.0, 52.7, 50.9, 302.8),
    (11.0, 29.3, 40.0, 7.3, 21.4, 31.6, 140.6, 20.3, 24.1, 29.7, 22.7, 33.4, 37.3, 167.6),
    (54.0, 81.4, 87.8, 41.3, 68.0, 77.5, 410.0, 52.7, 52.5, 53.8, 54.2, 53.9, 51.9, 319.0),
  ),
  ("coco1k_3", "coco1k", "0.03", "C-3%"): (
    (28.2, 49.0, 63.6, 24.9, 58.5, 74.4, 298.6, 34.9, 40.6, 43.3, 44.6, 57.5, 59.8, 280.9),
    (41.1, 71.8, 82.1, 32.2, 65.4, 77.2, 369.8, 47.2, 49.5, 51.6, 50.6, 59.8, 59.8, 318.5),
    (0.2, 1.1, 2.1, 0.1, 0.6, 1.2, 5.3, 4.1, 5.1, 5.9, 4.2, 6.7, 8.1, 34.2),
    (23.7, 59.0, 74.3, 24.9, 56.4, 72.3, 310.6, 33.8, 39.2, 43.5, 45.3, 58.6, 61.7, 282.1),
  ),
  ("coco1k_5", "coco1k", "0.05", "C-5%"): (
    (48.5, 77.8, 85.7, 36.2, 69.7, 81.6, 399.5, 51.4, 53.8, 54.8, 54.5, 62.7, 62.3, 339.7),
    (48.6, 77.3, 86.5, 37.9, 71.1, 82.6, 404.0, 50.7, 54.2, 55.4, 55.9, 62.9, 62.3, 341.5),
    (1.0, 3.0, 5.3, 0.2, 0.5, 1.3, 11.3, 6.9, 7.9, 9.0, 2.9, 4.2, 5.7, 36.6),
    (30.4, 62.6, 79.1, 29.4, 63.1, 77.6, 342.2, 39.2, 42.6, 46.9, 49.6, 61.3, 63.6, 303.3),
  ),
}

# Tables 4 and 5: Nsum, Nsum(N) (the annotated positives removed), Rsum
ABLATION_METRICS = ("nsum", "nsum_n", "rsum")
SAMPLING = {"SN": "soft", "RS": "random", "HN": "hard"}
# (τ, sampling as printed, triplet kept) of each row, in the printed order
TABLE4_ROWS = tuple((tau, "SN", kept) for tau in (3, 5, 10) for kept in (True, False))
TABLE5_ROWS = tuple(
  (tau, sampling, kept) for sampling in ("RS", "HN") for tau in (3, 5, 10) for kept in (True, False)
)
TABLE4 = {
  "f30k": (
    (371.29, 257.42, 479.1),
    (369.73, 258.12, 476.5),
    (369.97, 257.21, 477.5),
    (371.31, 258.75, 478.2),
    (369.74, 257.64, 477.2),
    (370.17, 257.85, 475.8),
  ),
  "coco1k": (
    (429.41, 312.2, 517.9),
    (427.32, 313.06, 515.0),
    (429.74, 311.53, 520.5),
    (428.2, 312.89, 518.0),
    (429.09, 306.51, 521.3),
    (429.88, 309.27, 520.6),
  ),
}
TABLE5 = (
  (355.87, 257.93, 460.1),
  (344.44, 257.67, 441.7),
  (367.02, 258.25, 473.4),
  (363.27, 259.83, 468.3),
  (370.09, 257.42, 478.7),
  (365.72, 258.82, 471.2),
  (338.94, 249.04, 435.1),
  (344.19, 258.27, 439.5),
  (369.94, 257.97, 478.8),
  (351.68, 257.64, 450.4),
  (369.04, 256.85, 477.2),
  (351.18, 257.83, 448.6),
)


def ablation_overrides(tau: int, sampling: str, kept: bool) -> tuple[tuple[str, str], ...]:
  """The SAM term's settings of a Table 4 / 5 row."""
  return (
    ("loss.sam.temperature", f"{float(tau)}"),
    ("loss.sam.sampling", SAMPLING[sampling]),
    ("loss.sam.keep_triplet", str(kept)),
  )


def _ablation_rows(settings, values):
  return tuple(
    (
      f"τ={tau}, {sampling}, {'triplet kept' if kept else 'SAM alone'}",
      ("cvse", "sam"),
      ablation_overrides(tau, sampling, kept),
      printed,
    )
    for (tau, sampling, kept), printed in zip(settings, values, strict=True)
  )


ABLATION_CAPTION = "CVSE + SAM with τ, {} and the triplet kept or SAM alone: Nsum, Nsum(N), Rsum"

# Table 1: Pearson-R with Criss-Crossed's human judgements, all pairs and non-GT pairs
CORRELATION_METRICS = ("pearson/all", "pearson/non_gt")
TABLE1 = (
  ("Binary relevance (GT)", (0.711, 0.00)),
  ("NCS with SPICE", (0.729, 0.536)),
  ("NCS with CIDEr", (0.734, 0.453)),
)
CRISS_CROSSED = (
  "Criss-Crossed's human judgements of COCO pairs are not jitr data: printed for reference"
)

TABLES = (
  Table(
    "sam.table1.crisscrossed",
    PAPER,
    "Table 1",
    "Pearson-R of human judgements with binary relevance and NCS on Criss-Crossed (COCO "
    "test pairs): all 44k judged pairs and the non-ground-truth ones.",
    "reference",
    CORRELATION_METRICS,
    tuple(
      Row(label, dict(zip(CORRELATION_METRICS, v, strict=True)), (), CRISS_CROSSED)
      for label, v in TABLE1
    ),
    f"{SOURCE}, Table 1",
    decimals=3,
  ),
  *(
    _table(
      f"sam.table2.{suffix}",
      "Table 2",
      f"CVSE and SGR (†) and with SAM, trained on {printed} of the training images",
      part,
      tuple(
        (label, network, (("train_fraction", fraction),), values)
        for (label, network), values in zip(TABLE2_NETWORKS.items(), rows, strict=True)
      ),
    )
    for (suffix, part, fraction, printed), rows in TABLE2.items()
  ),
  *(
    _table(
      f"sam.table3.{part}",
      "Table 3",
      CAPTION,
      part,
      tuple(
        (label, network, (), values)
        for (label, network), values in zip(NETWORKS.items(), TABLE3[part], strict=True)
      ),
    )
    for part in ("f30k", "coco1k", "coco5k")
  ),
  *(
    _table(
      f"sam.table4.{part}",
      "Table 4",
      ABLATION_CAPTION.format("soft negatives (SN)"),
      part,
      _ablation_rows(TABLE4_ROWS, TABLE4[part]),
      ABLATION_METRICS,
    )
    for part in ("f30k", "coco1k")
  ),
  _table(
    "sam.table5.f30k",
    "Table 5",
    ABLATION_CAPTION.format("random (RS) or hard (HN) negatives"),
    "f30k",
    _ablation_rows(TABLE5_ROWS, TABLE5),
    ABLATION_METRICS,
  ),
)
"""SAM's tables in jitr-tables, Table 1 to 5."""
