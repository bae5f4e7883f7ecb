"""LSEH's results tables (Gong and Cosma, *Improving Visual-Semantic Embeddings by Learning
Semantically-Enhanced Hard Negatives*), as printed.

* Tables 4-7 (``lseh.table4.f30k``, ``lseh.table5.coco1k``, ``lseh.table6.coco5k``,
  ``lseh.table7.iaprtc12``): VSE++, VSRN, SGRAF-SAF, SGRAF-SGR and VSE∞ each trained with
  LMH1, LMH2 and LSEH; Recall@1, 5, 10 of each direction, their mean and its ``(± std)``
  (the population standard deviation of the three: :data:`!jitr.papers.published.DERIVED`).
  Every row is a jitr run (:func:`lseh_run`).
* Table 9 (``lseh.table9.*``): GSMN with LMH1, LUWM and LSEH, printed reference lines
  (GSMN is not a jitr network).
* Table 10 (``lseh.table10.*``): VSE∞ with LMH1, LSEH-SVD and LSEH-BERT; the LMH1 and
  LSEH-SVD rows are Tables 4-7's runs, LSEH-BERT the LSEH run with the semantic matrix of
  "pre-trained BERT-base" caption embeddings, which the paper does not define further:
  jitr reads it as the cosine of mean-pooled ``bert-base-uncased`` last-layer token
  vectors (:func:`lseh_bert_run`).
* Table 8 (:data:`TABLE8`), the mean over the five networks of Tables 4-7's Recall@K
  (and its ``± std`` over the fifteen values) per loss and dataset: printed numbers that
  :func:`table8_from` derives from those tables' rows.

What each row trains (Table 2 of the paper; LMH1: each network's benchmark settings, LMH2:
the triplet loss with LSEH's settings, margin 0.16): the learning rate and the epoch
``Update`` of Table 2, applied as the networks' official code applies ``lr_update``, ×0.1
at every multiple of it (``0.1 ** (epoch // lr_update)``); the margin of LMH1 0.2, LMH2
0.16, LSEH 0.185 with semantic factor 0.025 (the margin between 0.16 and 0.21 that Table 2
prints); the epochs of :data:`EPOCHS` (the paper prints none); everything else
``configs/paper.py:DATA,MODEL,triplet`` or ``...,lseh`` sets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jitr.papers.published import MEAN_STD_METRICS, Row, Run, Table, mean, population_std

PAPER = "LSEH (Gong and Cosma)"
SOURCE = (
  "Gong and Cosma, Improving Visual-Semantic Embeddings by Learning Semantically-Enhanced "
  "Hard Negatives"
)

# printed network names -> configs/paper.py MODEL, in the tables' order
NETWORKS = {
  "VSE++": "vsepp",
  "VSRN": "vsrn",
  "SGRAF-SAF": "saf",
  "SGRAF-SGR": "sgr",
  "VSE∞": "vseinf",
}
LOSSES = ("LMH1", "LMH2", "LSEH")
DATASETS = ("f30k", "coco", "iaprtc12")

# Table 2: (learning rate, Update) per network, loss and dataset (f30k, coco, iaprtc12);
# LSEH's are LMH2's
TABLE2 = {
  ("vsepp", "LMH1"): ((2e-4, 15), (2e-4, 15), (2e-4, 25)),
  ("vsepp", "LMH2"): ((2e-3, 3), (3e-3, 4), (8e-4, 5)),
  ("vsrn", "LMH1"): ((2e-4, 10), (2e-4, 15), (5e-4, 20)),
  ("vsrn", "LMH2"): ((4e-4, 5), (4e-4, 6), (5e-4, 20)),
  ("saf", "LMH1"): ((2e-4, 20), (2e-4, 10), (2e-4, 20)),
  ("saf", "LMH2"): ((4e-4, 16), (4e-4, 6), (4e-4, 15)),
  ("sgr", "LMH1"): ((2e-4, 30), (2e-4, 10), (2e-4, 30)),
  ("sgr", "LMH2"): ((4e-4, 20), (4e-4, 6), (4e-4, 20)),
  ("vseinf", "LMH1"): ((5e-4, 15), (5e-4, 15), (5e-4, 15)),
  ("vseinf", "LMH2"): ((8e-4, 10), (1e-3, 10), (9e-4, 10)),
}
MARGINS = {"LMH1": 0.2, "LMH2": 0.16}
"""The triplet margin of the LMH rows (LSEH's is its loss term's, configs/shapes.py)."""

# the epochs each network trains on f30k, coco, iaprtc12: its official scripts'
# (VSE++ 30; VSRN 30; SGRAF's F30K SAF 30 / SGR 40, COCO 20; LSEH's IAPR TC-12 scripts)
EPOCHS = {
  "vsepp": (30, 30, 30),
  "vsrn": (30, 30, 30),
  "saf": (30, 20, 40),
  "sgr": (40, 20, 40),
  "vseinf": (25, 25, 30),
}


# the official code's val_step: a validation every this many batches (LSEH, Section 4.2:
# 1,000 for SGRAF, 500 for VSE∞, VSRN and VSE++); the best checkpoint is the best of them
VAL_STEPS = {"vsepp": 500, "vsrn": 500, "saf": 1000, "sgr": 1000, "vseinf": 500}


def lseh_run(model: str, loss: str, data: str) -> Run:
  """The jitr run of one row: ``configs/paper.py:DATA,MODEL,triplet`` (LMH1, LMH2) or
  ``...,lseh`` with Table 2's learning rate, its decays and the row's margin (module
  docstring), validated every :data:`VAL_STEPS` batches as the paper's runs are."""
  at = DATASETS.index(data)
  learning_rate, update = TABLE2[(model, "LMH1" if loss == "LMH1" else "LMH2")][at]
  epochs = EPOCHS[model][at]
  decays = tuple(range(update, epochs, update))
  overrides = [
    ("optimizer.learning_rate", repr(learning_rate)),
    ("optimizer.decay_epochs", repr(decays)),
    ("num_epochs", str(epochs)),
    ("eval_every_steps", str(VAL_STEPS[model])),
  ]
  if loss in MARGINS:
    overrides.append(("loss.triplet.margin", repr(MARGINS[loss])))
  spec = f"{data},{model},{'lseh' if loss == 'LSEH' else 'triplet'}"
  return Run(f"lseh_{data}_{model}_{loss.lower()}", spec, tuple(overrides))


def _values(printed: Sequence[float]) -> dict[str, float]:
  return dict(zip(MEAN_STD_METRICS, printed, strict=True))


def _results_table(name: str, printed_as: str, caption: str, protocol: str, data: str, rows):
  """Tables 4-7: ``rows`` the printed values in order, network by network, LMH1, LMH2,
  LSEH each."""
  labelled = [(network, loss) for network in NETWORKS for loss in LOSSES]
  return Table(
    name,
    PAPER,
    printed_as,
    caption,
    protocol,
    MEAN_STD_METRICS,
    tuple(
      Row(f"{network} {loss}", _values(v), (lseh_run(NETWORKS[network], loss, data),))
      for (network, loss), v in zip(labelled, rows, strict=True)
    ),
    SOURCE,
  )


F30K = (
  (38.9, 68.0, 78.5, 61.8, 16.8, 29.7, 58.7, 69.8, 52.7, 16.9),
  (41.3, 71.0, 82.2, 64.8, 17.3, 33.3, 61.5, 72.0, 55.6, 16.3),
  (45.9, 74.0, 82.7, 67.5, 15.7, 33.2, 62.2, 73.3, 56.2, 16.9),
  (69.8, 89.0, 94.4, 84.4, 10.6, 52.1, 78.8, 86.6, 72.5, 14.8),
  (71.1, 91.5, 95.8, 86.1, 10.8, 54.8, 81.0, 87.4, 74.4, 14.1),
  (73.0, 92.8, 95.7, 87.2, 10.1, 55.8, 81.9, 88.8, 75.5, 14.2),
  (75.5, 93.6, 97.0, 88.7, 9.4, 55.3, 81.7, 88.5, 75.2, 14.3),
  (74.0, 93.6, 97.0, 88.2, 10.1, 54.6, 80.6, 87.0, 74.1, 14.0),
  (76.2, 93.8, 97.2, 89.1, 9.2, 57.7, 82.3, 88.8, 76.3, 13.4),
  (74.2, 92.5, 96.5, 87.7, 9.7, 55.4, 80.6, 85.9, 74.0, 13.3),
  (0.3, 1.3, 2.0, 1.2, 0.7, 0.4, 1.5, 2.8, 1.6, 1.0),
  (78.2, 94.3, 96.8, 89.8, 8.2, 57.6, 82.5, 87.9, 76.0, 13.2),
  (80.8, 96.4, 98.3, 91.8, 7.8, 62.6, 86.9, 91.7, 80.4, 12.7),
  (74.4, 91.7, 96.3, 87.5, 9.4, 56.1, 82.3, 89.0, 75.8, 14.2),
  (82.4, 96.0, 98.6, 92.3, 7.1, 63.7, 87.1, 92.5, 81.1, 12.5),
)
COCO1K = (
  (54.5, 84.9, 91.7, 77.0, 16.2, 40.8, 75.6, 86.3, 67.6, 19.4),
  (11.9, 38.5, 53.0, 34.5, 17.0, 2.5, 8.6, 13.8, 8.3, 4.6),
  (56.3, 85.3, 92.2, 77.9, 15.6, 41.2, 76.1, 86.6, 68.0, 19.4),
  (76.4, 94.2, 97.6, 89.4, 9.3, 63.1, 89.4, 94.3, 82.3, 13.7),
  (73.5, 94.7, 98.1, 88.8, 10.9, 61.7, 89.3, 94.8, 81.9, 14.5),
  (76.5, 95.7, 98.4, 90.2, 9.7, 62.0, 90.1, 95.1, 82.4, 14.6),
  (80.2, 96.6, 98.7, 91.8, 8.3, 64.5, 90.5, 96.0, 83.7, 13.7),
  (78.8, 96.3, 98.6, 91.2, 8.8, 64.0, 90.6, 95.5, 83.4, 13.8),
  (80.1, 97.3, 98.7, 92.0, 8.5, 64.6, 90.9, 96.0, 83.8, 13.8),
  (79.7, 97.0, 98.8, 91.8, 8.6, 64.0, 90.5, 95.7, 83.4, 13.9),
  (79.7, 96.3, 98.6, 91.5, 8.4, 63.7, 90.5, 95.5, 83.2, 14.0),
  (80.1, 97.7, 99.1, 92.3, 8.6, 63.9, 90.7, 95.9, 83.5, 14.0),
  (80.8, 97.0, 99.0, 92.3, 8.1, 66.0, 91.7, 96.1, 84.6, 13.3),
  (81.0, 96.8, 99.0, 92.3, 8.0, 66.4, 92.0, 96.0, 84.8, 13.1),
  (82.2, 96.9, 98.6, 92.6, 7.4, 66.5, 91.9, 96.2, 84.9, 13.1),
)
COCO5K = (
  (27.6, 56.6, 69.5, 51.2, 17.5, 20.0, 45.7, 59.0, 41.6, 16.2),
  (3.0, 12.8, 20.9, 12.2, 7.3, 0.4, 2.2, 3.7, 2.1, 1.3),
  (28.5, 57.6, 70.3, 52.1, 17.5, 19.3, 46.2, 60.0, 41.8, 16.9),
  (49.4, 79.3, 88.5, 72.4, 16.7, 38.4, 69.3, 79.8, 62.5, 17.6),
  (49.3, 79.4, 88.4, 72.4, 16.7, 37.5, 68.3, 79.7, 61.8, 17.8),
  (50.3, 80.3, 88.6, 73.1, 16.5, 38.6, 69.6, 80.6, 62.9, 17.8),
  (54.4, 82.9, 91.0, 76.1, 15.7, 40.1, 69.7, 80.3, 63.4, 17.0),
  (54.8, 82.8, 90.2, 75.9, 15.2, 39.9, 69.3, 80.0, 63.1, 17.0),
  (56.4, 83.5, 90.7, 76.9, 14.8, 40.6, 69.7, 80.7, 63.7, 16.9),
  (56.8, 83.1, 91.1, 77.0, 14.7, 40.8, 69.7, 80.6, 63.7, 16.8),
  (55.9, 83.4, 90.8, 76.7, 15.0, 39.6, 68.9, 79.7, 62.7, 16.9),
  (57.8, 83.7, 91.0, 77.5, 14.2, 40.6, 69.8, 80.6, 63.7, 16.9),
  (58.3, 84.7, 91.8, 78.3, 14.4, 42.5, 72.7, 83.0, 66.1, 17.2),
  (58.9, 84.9, 92.2, 78.7, 14.3, 42.2, 72.4, 82.8, 65.8, 17.2),
  (58.8, 85.4, 92.6, 78.9, 14.5, 43.1, 73.2, 83.2, 66.5, 17.0),
)
IAPRTC12 = (
  (25.0, 56.5, 70.7, 50.7, 19.1, 27.4, 60.9, 73.5, 53.9, 19.5),
  (5.0, 14.2, 23.1, 14.1, 7.4, 0.7, 3.5, 6.1, 3.4, 2.2),
  (35.7, 69.6, 82.5, 62.6, 19.7, 36.2, 71.3, 83.2, 63.6, 20.0),
  (71.5, 92.9, 96.4, 86.9, 11.0, 71.8, 92.8, 96.0, 86.9, 10.7),
  (71.4, 93.4, 96.5, 87.1, 11.2, 70.8, 93.3, 96.5, 86.9, 11.4),
  (73.9, 93.8, 96.2, 88.0, 10.0, 73.3, 93.2, 96.0, 87.5, 10.1),
  (70.7, 94.4, 97.4, 87.5, 11.9, 73.1, 93.4, 97.2, 87.9, 10.6),
  (9.8, 25.5, 37.1, 24.1, 11.2, 1.9, 8.7, 14.0, 8.2, 5.0),
  (74.5, 95.1, 97.8, 89.1, 10.4, 73.7, 94.5, 97.7, 88.6, 10.6),
  (70.9, 93.3, 97.8, 87.3, 11.8, 72.1, 92.8, 96.7, 87.2, 10.8),
  (4.3, 12.7, 19.0, 12.0, 6.0, 2.3, 9.7, 15.2, 9.1, 5.3),
  (75.1, 95.6, 98.1, 89.6, 10.3, 75.1, 94.9, 98.0, 89.3, 10.1),
  (81.5, 97.3, 99.0, 92.6, 7.9, 79.1, 96.4, 98.8, 91.4, 8.8),
  (81.0, 96.7, 98.8, 92.2, 7.9, 80.7, 95.8, 97.9, 91.5, 7.7),
  (83.7, 97.7, 98.8, 93.4, 6.9, 81.4, 96.9, 98.5, 92.3, 7.7),
)

RECALL = "average Recall@k (%), each direction's mean and (± std) of R@1, 5, 10"
RESULTS = (
  _results_table(
    "lseh.table4.f30k",
    "Table 4",
    f"LMH1, LMH2 and LSEH on Flickr30K's test split (1,000 images): {RECALL}.",
    "full",
    "f30k",
    F30K,
  ),
  _results_table(
    "lseh.table5.coco1k",
    "Table 5",
    f"LMH1, LMH2 and LSEH on COCO 1K (the mean of the five 1,000-image folds): {RECALL}.",
    "folds",
    "coco",
    COCO1K,
  ),
  _results_table(
    "lseh.table6.coco5k",
    "Table 6",
    f"LMH1, LMH2 and LSEH on COCO 5K: {RECALL}.",
    "full",
    "coco",
    COCO5K,
  ),
  _results_table(
    "lseh.table7.iaprtc12",
    "Table 7",
    f"LMH1, LMH2 and LSEH on IAPR TC-12's test split (1,000 images, one caption each): {RECALL}.",
    "full",
    "iaprtc12",
    IAPRTC12,
  ),
)

GSMN = "GSMN is not a jitr network: printed for reference"
# Table 9: (label, printed values) per dataset; GSMN [15] and [10] are the numbers the
# paper quotes from GSMN's and LUWM's papers
TABLE9 = {
  ("f30k", "full", "Flickr30K"): (
    ("GSMN [15] LMH1", (71.4, 92.0, 96.1, 86.5, 10.8, 53.9, 79.7, 87.1, 73.6, 14.2)),
    ("GSMN [10] LUWM", (73.1, 92.7, 96.8, 87.5, 10.3, 54.2, 79.9, 87.3, 73.8, 14.2)),
    ("GSMN LSEH", (74.1, 93.3, 96.5, 88.0, 9.9, 55.4, 81.2, 87.2, 74.6, 13.8)),
  ),
  ("coco1k", "folds", "COCO 1K"): (
    ("GSMN [15] LMH1", (76.1, 95.6, 98.3, 90.0, 9.9, 60.4, 88.7, 95.0, 81.4, 15.0)),
    ("GSMN [10] LUWM", (76.8, 96.2, 98.5, 90.5, 9.7, 60.9, 89.0, 95.5, 81.8, 15.0)),
    ("GSMN LSEH", (79.7, 96.4, 98.9, 91.7, 8.5, 63.2, 90.3, 95.4, 83.0, 14.1)),
  ),
  ("coco5k", "full", "COCO 5K"): (
    ("GSMN [10] LUWM", (54.7, 82.2, 89.7, 75.5, 15.0, 38.5, 67.6, 78.9, 61.7, 17.0)),
    ("GSMN LSEH", (54.3, 82.4, 90.2, 75.6, 15.4, 39.0, 68.4, 79.5, 62.3, 17.1)),
  ),
}
GSMN_TABLES = tuple(
  Table(
    f"lseh.table9.{name}",
    PAPER,
    "Table 9",
    f"GSMN with LMH1, LUWM and LSEH on {printed}: {RECALL}.",
    protocol,
    MEAN_STD_METRICS,
    tuple(Row(label, _values(v), (), GSMN) for label, v in rows),
    SOURCE,
  )
  for (name, protocol, printed), rows in TABLE9.items()
)

BERT = (
  "LSEH-BERT: the paper names 'pre-trained BERT-base' caption embeddings only; jitr's "
  "reading: the cosine of mean-pooled bert-base-uncased token vectors"
)
# the Sentence-Transformers name of "pre-trained BERT-base": a Hugging Face BERT without
# Sentence-Transformers files loads as the mean of its last layer over a caption's tokens
BERT_MODEL = "bert-base-uncased"


def lseh_bert_run(svd: Run) -> Run:
  """LSEH-BERT: the LSEH-SVD run ``svd`` with its semantic matrix ``S`` the cosine of
  :data:`BERT_MODEL`'s mean-pooled caption vectors (``graded.semantic=cosine:sentence``,
  ``estimators.sentence.model``) in place of TF-IDF + SVD's."""
  overrides = (
    *svd.overrides,
    ("graded.semantic", "cosine:sentence"),
    ("estimators.sentence.model", BERT_MODEL),
  )
  return Run(f"{svd.name}_bert", svd.spec, overrides)


# Table 10's LSEH-BERT rows; its LMH1 and LSEH-SVD rows are Tables 4-7's VSE∞ rows
TABLE10_BERT = {
  "f30k": (81.0, 96.1, 97.7, 91.6, 7.5, 63.1, 87.1, 92.7, 81.0, 12.8),
  "coco1k": (82.0, 97.1, 98.7, 92.6, 7.5, 66.2, 92.0, 96.2, 84.8, 13.3),
  "coco5k": (59.1, 85.3, 92.6, 79.0, 14.4, 42.0, 72.7, 83.1, 65.9, 17.4),
  "iaprtc12": (82.9, 97.4, 98.5, 92.9, 7.1, 80.6, 96.5, 97.9, 91.7, 7.8),
}
# Table 10 prints COCO 1K's LSEH-SVD i2t std as 8.5 where Table 5 prints 7.4 for the
# same row (the recalls are the same): each table keeps its own printed number
TABLE10_SVD_STD = {"coco1k": 8.5}
ARITHMETIC_OFF = (
  "the paper's own arithmetic is off here: the printed i2t std is 8.5, the population std "
  "of its R@1, 5, 10 is 7.4 (Table 5 prints 7.4 for the same recalls)"
)


def _table10(results: Table) -> Table:
  """Table 10 on ``results``' dataset: its VSE∞ LMH1 and LSEH rows (as LMH1 and LSEH-SVD)
  and the LSEH-BERT row (:func:`lseh_bert_run`)."""
  key = results.name.rsplit(".", 1)[1]
  lmh1, svd = (row for row in results.rows if row.label in ("VSE∞ LMH1", "VSE∞ LSEH"))
  svd_values, notes = dict(svd.values), ""
  if key in TABLE10_SVD_STD:
    svd_values["i2t/std"], notes = TABLE10_SVD_STD[key], ARITHMETIC_OFF
  return Table(
    f"lseh.table10.{key}",
    PAPER,
    "Table 10",
    f"VSE∞ with LMH1, LSEH-SVD and LSEH-BERT; {results.caption}",
    results.protocol,
    MEAN_STD_METRICS,
    (
      Row("LMH1", lmh1.values, lmh1.runs),
      Row("LSEH BERT", _values(TABLE10_BERT[key]), (lseh_bert_run(svd.runs[0]),), BERT),
      Row("LSEH SVD", svd_values, svd.runs, notes),
    ),
    SOURCE,
  )


TABLE8 = {
  "f30k": {
    "LMH1": (82.9, 15.6, 71.0, 17.3),
    "LMH2": (65.6, 35.1, 56.3, 31.3),
    "LSEH": (85.2, 13.8, 73.0, 16.6),
  },
  "coco1k": {
    "LMH1": (88.8, 10.9, 80.3, 16.3),
    "LMH2": (79.7, 25.2, 68.3, 32.6),
    "LSEH": (89.0, 11.8, 80.5, 16.4),
  },
  "coco5k": {
    "LMH1": (71.0, 18.8, 59.4, 19.2),
    "LMH2": (63.2, 29.2, 51.1, 29.0),
    "LSEH": (71.7, 18.5, 59.7, 19.3),
  },
  "iaprtc12": {
    "LMH1": (81.0, 20.0, 81.5, 18.8),
    "LMH2": (45.9, 37.1, 39.8, 41.0),
    "LSEH": (84.5, 16.5, 84.3, 16.3),
  },
}
"""Table 8 as printed: per dataset and loss, (image-to-text mean, ± std, text-to-image
mean, ± std) over the five networks' Recall@1, 5, 10 (fifteen values each)."""

TABLE8_OFF = {
  ("coco1k", "LMH1"): (
    "the paper's own arithmetic is off here: Table 5's LMH1 image-to-text recalls give "
    "88.5 (± 12.0), Table 8 prints 88.8 (± 10.9)"
  )
}
"""Table 8's entries that Tables 4-7's printed rows do not give, and what they give."""


def table8_from(table: Table, values_of: Mapping[str, Sequence[Mapping[str, float]]]) -> dict:
  """Table 8's numbers of one of Tables 4-7: ``{loss: (i2t mean, i2t std, t2i mean, t2i
  std)}`` of the fifteen Recall@K per direction (five networks × R@1, 5, 10) in
  ``values_of[loss]``, one mapping of metrics per network (the printed rows, or jitr's
  means)."""
  out = {}
  for loss in LOSSES:
    numbers = []
    for direction in ("i2t", "t2i"):
      recalls = [row[f"{direction}/R@{k}"] for row in values_of[loss] for k in (1, 5, 10)]
      numbers += [mean(*recalls), population_std(*recalls)]
    out[loss] = tuple(numbers)
  return out


def rows_by_loss(table: Table) -> dict[str, list[Mapping[str, float]]]:
  """The printed values of Tables 4-7's rows grouped by loss (``VSE++ LMH1`` -> LMH1)."""
  out: dict[str, list[Mapping[str, float]]] = {loss: [] for loss in LOSSES}
  for row in table.rows:
    out[row.label.rsplit(" ", 1)[1]].append(row.values)
  return out


TABLES = (*RESULTS, *GSMN_TABLES, *(_table10(t) for t in RESULTS))
"""Every LSEH table jitr-tables lists, in the paper's order within each kind."""
