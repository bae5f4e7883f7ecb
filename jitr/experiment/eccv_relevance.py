"""``jitr-relevance-quality --eccv_captions``: relevance estimates ranked against ECCV
Caption's positives (Listwise ITR's Table I).

For COCO's 5K test captions (the standard ``testall_caps.txt``) and each graded source
(the language of ``config.graded``), the source's relevance of every (image, caption)
pair (:func:`jitr.experiment.split_relevance.estimated_relevance`, annotated pairs 1)
ranks each image's 25,000 captions and each caption's 5,000 images (score descending,
ties in index order); mAP@R and R-Precision are those rankings' against ECCV Caption's
positives (:mod:`!jitr.evaluation.eccv_caption_sets`). ``constant`` (every pair 0.5, the
annotated ones 1) is the paper's "pairwise annotation" row: the annotated pairs first,
the rest in index order; ``vectors:sentence`` is RSC, ``(1 + max_k cos(T_i^k, T_j)) / 2``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jitr.evaluation.eccv import extended_metrics
from jitr.evaluation.eccv_caption_sets import eccv_positives
from jitr.experiment.split_relevance import estimated_relevance, parse_in_split
from jitr.relevance.captions_io import CaptionSet

COLUMNS = (
  ("i2t/mAP@R", "i2t mAP@R"),
  ("i2t/R-P", "i2t R-P"),
  ("t2i/mAP@R", "t2i mAP@R"),
  ("t2i/R-P", "t2i R-P"),
)


def eccv_relevance_rows(
  captions: CaptionSet,
  estimators: Sequence[str],
  *,
  settings: Mapping[str, Any],
  log: Callable[[str], None] = print,
) -> list[dict]:
  """``{"estimator", "i2t/mAP@R", "i2t/R-P", "t2i/mAP@R", "t2i/R-P"}`` (fractions) of each
  graded source over ``captions`` (COCO's 5K test split in ``testall`` order; another
  layout is refused in one line, and so is a source that does not parse, before anything
  is computed)."""
  for spec in estimators:
    parse_in_split(spec)
  i2t, t2i = eccv_positives(captions.caption_image)
  rows = []
  for spec in estimators:
    log(f"eccv: {spec}")
    relevance, _ = estimated_relevance(spec, captions, settings=settings)
    row = {"estimator": spec}
    for d, scores, positives in (("i2t", relevance, i2t), ("t2i", relevance.T, t2i)):
      metrics = extended_metrics(scores, positives, ks=(1,))
      row[f"{d}/mAP@R"], row[f"{d}/R-P"] = metrics["mAP@R"], metrics["R-P"]
    rows.append(row)
  return rows


def format_eccv_table(rows: Sequence[dict]) -> str:
  """The rows as one markdown table, in percent."""
  head = ["estimator"] + [title for _, title in COLUMNS]
  lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * len(COLUMNS)]
  for r in rows:
    cells = [r["estimator"].replace("|", "\\|")] + [f"{100 * r[k]:.2f}" for k, _ in COLUMNS]
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)
