"""The networks' own published results, as their official repositories' READMEs print
them: VSE∞ (woodfrog/vse_infty, "Image-text Matching Results") and CVSE (BruceW91/CVSE,
"The results on MSCOCO and Flicke30K dataset"). These are the baselines the seed papers
start from; an imported official checkpoint (``jitr-import``) scores them too.

What each README's table measures, as its code evaluates:

* VSE∞: Recall@1 and @5 of image-to-text, then text-to-image (the columns ``R1 R5 R1
  R5``); Flickr30K's 1,000 test images; COCO's 1K test as the mean of the five
  1,000-image folds of the 5K test. BERT-base text, so its runs need
  ``--set=text.pretrained=FOLDER`` (a local copy of bert-base-uncased).
* CVSE: Recall@1, 5, 10 both ways and mR, their mean; Flickr30K's test split, and COCO's
  ``test`` split (1,000 images, 5,000 captions: the official ``evaluate.py --split
  test``, no five-fold mean), so its COCO run tests on that split
  (``test_split=test``, ``eval_folds=0``).
"""

from __future__ import annotations

from jitr.papers.published import MR_METRICS, Row, Run, Table

VSEINF_SOURCE = "woodfrog/vse_infty README.md, 'Image-text Matching Results'"
CVSE_SOURCE = "BruceW91/CVSE README.md, 'The results on MSCOCO and Flicke30K dataset'"
VSEINF_METRICS = ("i2t/R@1", "i2t/R@5", "t2i/R@1", "t2i/R@5")

F30K_VSEINF = Run("f30k_vseinf_triplet", "f30k,vseinf,triplet")
COCO_VSEINF = Run("coco_vseinf_triplet", "coco,vseinf,triplet")
F30K_CVSE = Run("f30k_cvse_triplet", "f30k,cvse,triplet")
COCO_CVSE_TEST1K = Run(
  "coco_cvse_triplet_test1k",
  "coco,cvse,triplet",
  (("test_split", "test"), ("eval_folds", "0")),
)

GRID = "grid features (not BUTD regions): jitr reads precomp region features only"
VSEPP_BERT = "VSE++ with BUTD regions and a BERT-base text tower: not a jitr network"


def _vseinf(values: tuple[float, float, float, float]) -> dict[str, float]:
  return dict(zip(VSEINF_METRICS, values, strict=True))


def _cvse(values: tuple[float, ...]) -> dict[str, float]:
  return dict(zip(MR_METRICS, values, strict=True))


def _vseinf_table(name: str, printed_as: str, caption: str, protocol: str, run: Run, values):
  """A VSE∞ README table: its four rows' ``values`` (R@1, R@5 both ways) in printed
  order, the BUTD-region VSE∞ row trained by ``run``."""
  labels = (
    ("VSE++ (BUTD region, BERT-base)", (), VSEPP_BERT),
    ("VSEInfty (BUTD region, BERT-base)", (run,), ""),
    ("VSEInfty (BUTD grid, BERT-base)", (), GRID),
    ("VSEInfty (WSL grid, BERT-base)", (), GRID),
  )
  rows = tuple(
    Row(label, _vseinf(v), runs, notes) for (label, runs, notes), v in zip(labels, values)
  )
  return Table(
    name,
    "VSE∞ (official README)",
    printed_as,
    caption,
    protocol,
    VSEINF_METRICS,
    rows,
    VSEINF_SOURCE,
  )


def _cvse_table(name: str, printed_as: str, caption: str, run: Run, values) -> Table:
  """A CVSE README table: its one row's ``values`` (R@1, 5, 10 both ways, mR)."""
  return Table(
    name,
    "CVSE (official README)",
    printed_as,
    caption,
    "full",
    MR_METRICS,
    (Row("CVSE", _cvse(values), (run,)),),
    CVSE_SOURCE,
  )


TABLES = (
  _vseinf_table(
    "vseinf.readme.f30k",
    "Results on Flickr30K Test Split",
    "VSE∞ and VSE++ with BERT-base text, Flickr30K test (1,000 images).",
    "full",
    F30K_VSEINF,
    (
      (63.4, 87.2, 45.6, 76.4),
      (81.7, 95.4, 61.4, 85.9),
      (81.5, 97.1, 63.7, 88.3),
      (88.4, 98.3, 74.2, 93.7),
    ),
  ),
  _vseinf_table(
    "vseinf.readme.coco1k",
    "Results of 5-fold evaluation on COCO 1K Test Split",
    "VSE∞ and VSE++ with BERT-base text, COCO 1K (mean of five folds).",
    "folds",
    COCO_VSEINF,
    (
      (67.9, 91.9, 54.0, 85.6),
      (79.7, 96.4, 64.8, 91.4),
      (80.4, 96.8, 66.4, 92.1),
      (84.5, 98.1, 72.0, 93.9),
    ),
  ),
  _cvse_table(
    "cvse.readme.f30k",
    "The results on MSCOCO and Flicke30K dataset: Flickr30k",
    "CVSE on Flickr30K test (1,000 images); mR is the mean of the six Recall@K.",
    F30K_CVSE,
    (73.5, 92.1, 95.8, 52.9, 80.4, 87.8, 80.4),
  ),
  _cvse_table(
    "cvse.readme.coco1k",
    "The results on MSCOCO and Flicke30K dataset: MSCOCO",
    "CVSE on COCO's 1K test split (the official evaluate.py --split test, one fold).",
    COCO_CVSE_TEST1K,
    (74.8, 95.1, 98.3, 59.9, 89.4, 95.2, 85.5),
  ),
)
