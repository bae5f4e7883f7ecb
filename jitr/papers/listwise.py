"""Listwise ITR's results tables (Li et al., *Integrating Listwise Ranking into
Pairwise-based Image-Text Retrieval*), as printed: Table I (``listwise.table1.eccv``: the
pairwise annotations' and RSC's rankings of COCO's 5K test split against ECCV Caption's
positives, no training: ``jitr-relevance-quality --eccv_captions``, printed reference
here), Table II (``listwise.table2.f30k``),
Table III (``listwise.table3.coco1k``) and Table IV (``listwise.table4.coco5k``), R@1, 5, 10
both ways and RSUM; the ablations of Tables V and VI (``listwise.table5.f30k``,
``listwise.table6.coco1k``, ``listwise.table6.coco5k``: VSE++† with the triplet alone,
Smooth-NDCG alone and both, :func:`ablation_runs`) and Table VII (``listwise.table7.eccv``:
the same COCO runs against ECCV Caption's positives, mAP@R, R-P and R@1 both ways:
``jitr-eval --eccv``); Table VIII (``listwise.table8.f30k``: seconds per epoch of VSE∞
with and without Listwise on the paper's GPU, printed reference; jitr's ratio of the two
steps is ``scripts/bench_listwise_epoch.py``'s).

Rows jitr runs (``configs/paper.py:DATA,MODEL,LOSS``): SAF, SGR and their SGRAF ensemble
(the mean of the two similarity matrices), each with the triplet loss (``triplet``: the
numbers the paper quotes from SGRAF's paper) and ``+ Listwise`` (``sndcg``: the triplet
with Smooth-NDCG on sentence relevance); VSE++† (the paper's VSE++ on BUTD regions) and
VSE∞ with and without Listwise; CVSE and VSRN (the numbers quoted from their papers, which
jitr's runs of their official settings are compared with). The other methods are printed
reference lines, and so are the original VSE++ (VGG / ResNet features, not BUTD regions)
and ``VSE∞ + Listwise*`` (an ensemble of two VSE∞ + Listwise models the paper does not
describe further). COCO 5K prints no R@5 and RSUM for the quoted SGRAF rows (``-``).
"""

from __future__ import annotations

from jitr.papers.published import RSUM_METRICS, Row, Run, Table

PAPER = "Listwise ITR (Li et al.)"
SOURCE = "Li et al., Integrating Listwise Ranking into Pairwise-based Image-Text Retrieval"
QUOTED = "a method the paper compares with, not in jitr: printed for reference"
NOTES = {
  "VSE++ (BMVC'18) [14]": (
    "the original VSE++ on VGG / ResNet image features, not BUTD regions: printed for reference"
  ),
  "VSE∞ + Listwise*": (
    "the ensemble of two VSE∞ + Listwise models, which the paper does not describe further: "
    "printed for reference"
  ),
}


def _run(data: str, model: str, loss: str) -> Run:
  return Run(f"{data}_{model}_{loss}", f"{data},{model},{loss}")


def _runs(data: str) -> dict[str, tuple[Run, ...]]:
  """The runs of each row jitr trains, by printed label."""

  def one(model: str, loss: str) -> tuple[Run, ...]:
    return (_run(data, model, loss),)

  return {
    "SAF (AAAI'21) [12]": one("saf", "triplet"),
    "SAF + Listwise": one("saf", "sndcg"),
    "SGR (AAAI'21) [12]": one("sgr", "triplet"),
    "SGR + Listwise": one("sgr", "sndcg"),
    "SGRAF (AAAI'21) [12]": (*one("sgr", "triplet"), *one("saf", "triplet")),
    "SGRAF + Listwise": (*one("sgr", "sndcg"), *one("saf", "sndcg")),
    "CVSE (ECCV'20) [22]": one("cvse", "triplet"),
    "VSRN (ICCV'19) [10]": one("vsrn", "triplet"),
    "VSE∞ (CVPR'21) [23]": one("vseinf", "triplet"),
    "VSE++†": one("vsepp", "triplet"),
    "VSE++† + Listwise": one("vsepp", "sndcg"),
    "VSE∞ + Listwise": one("vseinf", "sndcg"),
  }


def _values(printed) -> dict[str, float]:
  """The printed numbers by metric; a ``-`` (None) is not printed."""
  return {m: v for m, v in zip(RSUM_METRICS, printed, strict=True) if v is not None}


def _table(name: str, printed_as: str, caption: str, protocol: str, data: str, rows) -> Table:
  runs = _runs(data)
  return Table(
    name,
    PAPER,
    printed_as,
    caption,
    protocol,
    RSUM_METRICS,
    tuple(
      Row(label, _values(v), runs.get(label, ()), NOTES.get(label, "" if label in runs else QUOTED))
      for label, v in rows
    ),
    SOURCE,
  )


F30K = (
  ("SCAN (ECCV'18) [9]", (67.4, 90.3, 95.8, 48.6, 77.7, 85.2, 465.0)),
  ("CAMP (ICCV'19) [32]", (68.1, 89.7, 95.2, 51.5, 77.1, 85.3, 466.9)),
  ("BFAN (MM'19) [33]", (68.1, 91.4, 95.9, 50.8, 78.4, 85.8, 470.4)),
  ("PFAN (IJCAI'19) [34]", (70.0, 91.8, 95.0, 50.4, 78.7, 86.1, 472.0)),
  ("PFAN++ (TMM'20) [35]", (70.1, 91.8, 96.1, 52.7, 79.9, 87.0, 477.6)),
  ("CAAN (CVPR'20) [1]", (70.1, 91.6, 97.2, 52.8, 79.0, 87.9, 478.6)),
  ("RRTC (TCSVT'21) [36]", (72.7, 93.8, 96.8, 54.2, 79.4, 86.1, 483.0)),
  ("MMCA (CVPR'20) [37]", (74.2, 92.8, 96.4, 54.8, 81.4, 87.8, 487.4)),
  ("IMRAM (CVPR'20) [2]", (74.1, 93.0, 96.6, 53.9, 79.4, 87.2, 484.2)),
  ("GSMN (CVPR'20) [11]", (76.4, 94.3, 97.3, 57.4, 82.3, 89.0, 496.8)),
  ("UARDA (TMM'22) [38]", (77.8, 95.0, 97.6, 57.8, 82.9, 89.2, 500.3)),
  ("DREN (TCSVT'22) [39]", (78.8, 95.0, 97.5, 58.8, 83.8, 89.5, 503.4)),
  ("CMCAN (AAAI'22) [40]", (79.5, 95.6, 97.6, 60.9, 84.3, 89.9, 507.8)),
  ("DRCE (TCSVT'23) [41]", (81.0, 96.0, 97.7, 60.0, 84.1, 89.6, 508.4)),
  ("NAAF (CVPR'22) [13]", (81.9, 96.1, 98.3, 61.0, 85.3, 90.6, 513.2)),
  ("SAF (AAAI'21) [12]", (73.7, 93.3, 96.3, 56.1, 81.5, 88.0, 488.9)),
  ("SAF + Listwise", (77.4, 94.1, 97.2, 57.3, 83.5, 89.2, 498.7)),
  ("SGR (AAAI'21) [12]", (75.2, 93.3, 96.6, 56.2, 81.0, 86.5, 488.8)),
  ("SGR + Listwise", (77.2, 94.5, 97.5, 57.9, 83.5, 88.8, 499.4)),
  ("SGRAF (AAAI'21) [12]", (77.8, 94.1, 97.4, 58.5, 83.0, 88.8, 499.6)),
  ("SGRAF + Listwise", (80.5, 95.2, 97.7, 60.6, 85.0, 90.1, 509.1)),
  ("CVSE (ECCV'20) [22]", (73.5, 92.1, 95.8, 52.9, 80.4, 87.8, 482.5)),
  ("VSRN (ICCV'19) [10]", (71.3, 90.6, 96.0, 54.7, 81.8, 88.2, 482.6)),
  ("VSRN++ (TPAMI'22) [42]", (79.2, 94.6, 97.5, 60.6, 85.6, 91.4, 508.9)),
  ("DSRAN (TCSVT'21) [43]", (80.5, 95.5, 97.9, 59.2, 86.0, 91.9, 511.0)),
  ("VSE∞ (CVPR'21) [23]", (81.7, 95.4, 97.6, 61.4, 85.9, 91.5, 513.5)),
  ("VSE++ (BMVC'18) [14]", (52.9, 80.5, 87.2, 39.6, 70.1, 79.5, 409.8)),
  ("VSE++†", (70.4, 90.7, 95.2, 51.6, 78.6, 86.2, 472.7)),
  ("VSE++† + Listwise", (70.6, 91.9, 95.6, 53.0, 79.9, 86.8, 477.7)),
  ("VSE∞ (CVPR'21) [23]", (81.7, 95.4, 97.6, 61.4, 85.9, 91.5, 513.5)),
  ("VSE∞ + Listwise", (81.0, 96.0, 98.2, 62.6, 87.2, 92.5, 517.4)),
  ("VSE∞ + Listwise*", (82.6, 96.4, 98.5, 63.5, 88.0, 92.9, 521.9)),
)
COCO1K = (
  ("CAMP (ICCV'19) [32]", (72.3, 94.8, 98.3, 58.5, 87.9, 95.0, 506.8)),
  ("SCAN (ECCV'18) [9]", (72.7, 94.8, 98.4, 58.8, 88.4, 94.8, 507.9)),
  ("BFAN (MM'19) [33]", (74.9, 95.2, 98.3, 59.4, 88.4, 94.5, 510.7)),
  ("MMCA (CVPR'20) [37]", (74.8, 95.6, 97.7, 61.6, 89.8, 95.2, 514.7)),
  ("CAAN (CVPR'20) [1]", (75.5, 95.4, 98.5, 61.3, 89.7, 95.2, 515.6)),
  ("IMRAM (CVPR'20) [2]", (76.7, 95.6, 98.5, 61.7, 89.1, 95.0, 516.6)),
  ("RRTC (TCSVT'21) [36]", (76.2, 96.3, 98.9, 61.6, 89.3, 94.6, 516.9)),
  ("PFAN (IJCAI'19) [34]", (76.5, 96.3, 99.0, 61.6, 89.6, 95.2, 518.2)),
  ("PFAN++ (TMM'20) [35]", (77.1, 96.5, 98.3, 62.5, 89.9, 95.4, 519.7)),
  ("GSMN (CVPR'20) [11]", (78.4, 96.4, 98.6, 63.3, 90.1, 95.7, 522.5)),
  ("UARDA (TMM'22) [38]", (78.6, 96.5, 98.9, 63.9, 90.7, 96.2, 524.8)),
  ("NAAF (CVPR'22) [13]", (80.5, 96.5, 98.8, 64.1, 90.7, 96.5, 527.2)),
  ("CMCAN (AAAI'22) [40]", (81.2, 96.8, 98.7, 65.4, 91.0, 96.2, 529.3)),
  ("SAF (AAAI'21) [12]", (76.1, 95.4, 98.3, 61.8, 89.4, 95.3, 516.3)),
  ("SAF + Listwise", (77.5, 95.6, 98.4, 62.8, 89.7, 95.4, 519.4)),
  ("SGR (AAAI'21) [12]", (78.0, 95.8, 98.2, 61.4, 89.3, 95.4, 518.1)),
  ("SGR + Listwise", (78.1, 96.1, 98.6, 62.7, 89.8, 95.4, 520.7)),
  ("SGRAF (AAAI'21) [12]", (79.6, 96.2, 98.5, 63.2, 90.7, 96.1, 524.3)),
  ("SGRAF + Listwise", (80.1, 96.5, 98.9, 64.3, 90.8, 96.1, 526.7)),
  ("CVSE (ECCV'20) [22]", (74.8, 95.1, 98.3, 59.9, 89.4, 95.2, 512.7)),
  ("VSRN (ICCV'19) [10]", (76.2, 94.8, 98.2, 62.8, 89.7, 95.1, 516.8)),
  ("VSRN++ (TPAMI'22) [42]", (77.9, 96.0, 98.5, 64.1, 91.0, 96.1, 523.6)),
  ("DSRAN (TCSVT'21) [43]", (80.6, 96.7, 98.7, 64.5, 90.8, 95.8, 527.1)),
  ("VSE∞ (CVPR'21) [23]", (79.7, 96.4, 98.9, 64.8, 91.4, 96.3, 527.5)),
  ("VSE++ (BMVC'18) [14]", (64.6, 90.0, 95.7, 52.0, 84.3, 92.0, 478.6)),
  ("VSE++†", (72.8, 94.6, 98.1, 57.9, 88.0, 94.4, 505.8)),
  ("VSE++† + Listwise", (73.4, 94.4, 98.1, 58.8, 88.4, 94.6, 507.7)),
  ("VSE∞ (CVPR'21) [23]", (79.7, 96.4, 98.9, 64.8, 91.4, 96.3, 527.5)),
  ("VSE∞ + Listwise", (80.2, 96.6, 98.9, 65.3, 91.3, 96.3, 528.7)),
  ("VSE∞ + Listwise*", (80.8, 96.7, 98.9, 66.0, 91.9, 96.5, 530.8)),
)
COCO5K = (
  ("SCAN (ECCV'18) [9]", (50.4, 82.2, 90.0, 38.6, 69.3, 80.4, 410.9)),
  ("BFAN (MM'19) [33]", (52.9, 82.8, 90.6, 38.3, 67.8, 79.3, 411.7)),
  ("IMRAM (CVPR'20) [2]", (53.7, 83.2, 91.0, 39.7, 69.1, 79.8, 416.5)),
  ("DRCE (TCSVT'23) [41]", (56.2, 83.0, 90.9, 40.3, 69.5, 80.6, 420.5)),
  ("NAAF (CVPR'22) [13]", (58.9, 85.2, 92.0, 42.5, 70.9, 81.4, 430.9)),
  ("SAF (AAAI'21) [12]", (53.3, None, 90.1, 39.8, None, 80.2, None)),
  ("SAF + Listwise", (54.6, 83.3, 91.3, 41.1, 70.3, 80.7, 421.3)),
  ("SGR (AAAI'21) [12]", (56.9, None, 90.5, 40.2, None, 79.8, None)),
  ("SGR + Listwise", (56.9, 84.0, 91.1, 41.1, 70.2, 80.5, 423.8)),
  ("SGRAF (AAAI'21) [12]", (57.8, None, 91.6, 41.9, None, 81.3, None)),
  ("SGRAF + Listwise", (59.2, 85.1, 92.1, 43.0, 71.7, 82.0, 433.1)),
  ("VSRN (ICCV'19) [10]", (53.0, 81.1, 89.4, 40.5, 70.6, 81.1, 415.7)),
  ("VSRN++ (TPAMI'22) [42]", (54.7, 82.9, 90.9, 42.0, 72.2, 82.7, 425.4)),
  ("DSRAN (TCSVT'21) [43]", (57.9, 85.3, 92.0, 41.7, 72.7, 82.8, 432.4)),
  ("VSE∞ (CVPR'21) [23]", (58.3, 85.3, 92.3, 42.4, 72.7, 83.2, 434.3)),
  ("VSE++ (BMVC'18) [14]", (41.3, 71.1, 81.2, 30.3, 59.4, 72.4, 355.7)),
  ("VSE++†", (49.9, 78.4, 88.0, 35.6, 65.9, 77.5, 395.4)),
  ("VSE++† + Listwise", (50.5, 79.5, 88.1, 36.0, 66.4, 78.2, 398.6)),
  ("VSE∞ (CVPR'21) [23]", (58.3, 85.3, 92.3, 42.4, 72.7, 83.2, 434.3)),
  ("VSE∞ + Listwise", (59.1, 85.4, 92.6, 42.9, 73.4, 83.4, 436.9)),
  ("VSE∞ + Listwise*", (60.6, 86.3, 92.5, 43.9, 73.9, 84.0, 441.2)),
)

# Tables V and VI: the ablation on VSE++† (triplet alone, Smooth-NDCG alone, both)
ABLATION = ("Triplet", "S-NDCG", "Triplet + S-NDCG")
ABLATION_F30K = (
  (70.4, 90.7, 95.2, 51.6, 78.6, 86.2, 472.7),
  (59.1, 84.0, 89.9, 39.5, 69.8, 79.7, 422.0),
  (70.6, 91.9, 95.6, 53.0, 79.9, 86.8, 477.7),
)
ABLATION_COCO1K = (
  (72.8, 94.6, 98.1, 57.9, 88.0, 94.4, 505.8),
  (62.1, 88.8, 95.3, 49.0, 82.1, 90.9, 468.2),
  (73.4, 94.4, 98.1, 58.8, 88.4, 94.6, 507.7),
)
ABLATION_COCO5K = (
  (49.9, 78.4, 88.0, 35.6, 65.9, 77.5, 395.4),
  (37.0, 66.7, 78.5, 27.9, 56.1, 69.2, 335.3),
  (50.5, 79.5, 88.1, 36.0, 66.4, 78.2, 398.6),
)


def ablation_runs(data: str) -> tuple[Run, ...]:
  """The ablation's three runs of VSE++†: the triplet alone, Smooth-NDCG alone (the
  ``sndcg`` run with the triplet's weight 0: its hinge is computed and reported, it trains
  nothing) and both."""
  alone = Run(f"{data}_vsepp_sndcg_alone", f"{data},vsepp,sndcg", (("loss.triplet.weight", "0.0"),))
  return (_run(data, "vsepp", "triplet"), alone, _run(data, "vsepp", "sndcg"))


# Table I: the relevance ranking itself (no training) against ECCV Caption's positives
RELEVANCE_METRICS = tuple(f"{d}/{m}" for d in ("i2t", "t2i") for m in ("mAP@R", "R-P"))
RELEVANCE_RANKING = (
  ("Pairwise Annotation", (31.33, 31.41, 13.62, 13.67), "constant"),
  ("RSC", (39.93, 43.73, 37.53, 44.94), "vectors:sentence"),
)
RELEVANCE_COMMAND = (
  "not a trained run: jitr-relevance-quality --eccv_captions=<coco_precomp>/testall_caps.txt "
  "--estimators={} computes it from COCO's test captions"
)

# Table VIII: seconds per training epoch and for testing on Flickr30K (± std), RTX 3090
TIMING_METRICS = ("train_seconds", "train_seconds_std", "test_seconds", "test_seconds_std")
TIMING = (("VSE∞", (229.6, 5.6, 4.6, 0.1)), ("+ Listwise", (241.9, 5.4, 4.6, 0.1)))
TIMING_NOTE = (
  "seconds on the paper's GPU (an RTX 3090): scripts/bench_listwise_epoch.py measures "
  "jitr's ratio of the two train steps beside the paper's 1.054"
)

# Table VII: the same ablation on COCO's 5K test split against ECCV Caption's positives
ECCV_METRICS = tuple(f"{d}/{m}" for d in ("i2t", "t2i") for m in ("mAP@R", "R-P", "R@1"))
ABLATION_ECCV = (
  (26.80, 38.98, 65.50, 46.29, 54.72, 85.44),
  (21.40, 33.53, 56.38, 41.72, 50.72, 80.56),
  (27.75, 39.68, 68.83, 47.35, 55.56, 86.49),
)


def _ablation(
  name: str, printed_as: str, caption: str, protocol: str, data: str, rows, metrics=RSUM_METRICS
) -> Table:
  return Table(
    name,
    PAPER,
    printed_as,
    caption,
    protocol,
    metrics,
    tuple(
      Row(label, dict(zip(metrics, v, strict=True)), (run,))
      for label, v, run in zip(ABLATION, rows, ablation_runs(data), strict=True)
    ),
    SOURCE,
  )


TABLES = (
  Table(
    "listwise.table1.eccv",
    PAPER,
    "TABLE I",
    "Relevance scores of the RSC module and the pairwise annotations ranking COCO's 5K test "
    "split, against ECCV Caption's positives: mAP@R and R-P.",
    "reference",
    RELEVANCE_METRICS,
    tuple(
      Row(label, dict(zip(RELEVANCE_METRICS, v, strict=True)), (), RELEVANCE_COMMAND.format(src))
      for label, v, src in RELEVANCE_RANKING
    ),
    SOURCE,
  ),
  _table(
    "listwise.table2.f30k",
    "TABLE II",
    "Experimental results on the Flickr30K dataset (1,000 test images): R@K and RSUM.",
    "full",
    "f30k",
    F30K,
  ),
  _table(
    "listwise.table3.coco1k",
    "TABLE III",
    "Experimental results on the MS-COCO 1K test set (the mean of the five folds).",
    "folds",
    "coco",
    COCO1K,
  ),
  _table(
    "listwise.table4.coco5k",
    "TABLE IV",
    "Experimental results on the MS-COCO 5K test set.",
    "full",
    "coco",
    COCO5K,
  ),
  _ablation(
    "listwise.table5.f30k",
    "TABLE V",
    "Ablation studies on the Flickr30K dataset: VSE++† with the triplet, Smooth-NDCG or both.",
    "full",
    "f30k",
    ABLATION_F30K,
  ),
  _ablation(
    "listwise.table6.coco1k",
    "TABLE VI",
    "Ablation studies on the MS-COCO dataset, 1K test set (the mean of the five folds).",
    "folds",
    "coco",
    ABLATION_COCO1K,
  ),
  _ablation(
    "listwise.table6.coco5k",
    "TABLE VI",
    "Ablation studies on the MS-COCO dataset, 5K test set.",
    "full",
    "coco",
    ABLATION_COCO5K,
  ),
  _ablation(
    "listwise.table7.eccv",
    "TABLE VII",
    "Ablation studies on the ECCV Caption dataset (COCO's 5K test split with ECCV Caption's "
    "positives): mAP@R, R-P and R@1.",
    "eccv",
    "coco",
    ABLATION_ECCV,
    ECCV_METRICS,
  ),
  Table(
    "listwise.table8.f30k",
    PAPER,
    "TABLE VIII",
    "Computational efficiency on the Flickr30K dataset: training time per epoch and testing "
    "time (seconds, ± std) of VSE∞ and VSE∞ + Listwise.",
    "reference",
    TIMING_METRICS,
    tuple(
      Row(label, dict(zip(TIMING_METRICS, v, strict=True)), (), TIMING_NOTE) for label, v in TIMING
    ),
    SOURCE,
    decimals=1,
  ),
)
"""Tables I-VIII."""
