"""``jitr-relevance-agreement``'s run: the Kendall tau of each estimator against people.

:func:`agreement_report` reads the captions and the judgments, builds the protocol
(:mod:`jitr.relevance.agreement`), scores it with each estimator built from its
settings, and returns the markdown table (tau-b for CrowdFlower, with the published
rows; tau-c for the expert file).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jitr.fileio import write_text_atomic
from jitr.relevance import agreement
from jitr.relevance.captions_io import read_captions
from jitr.relevance.registry import check_estimator_names

DEFAULT_ESTIMATORS = ("cider", "sentence", "lsa")


def agreement_report(
  captions_path: str,
  judgments_path: str,
  *,
  judgments_format: str = "auto",
  expert_scores: str = "mean",
  own_caption: str | None = None,
  estimators: Sequence[str] = DEFAULT_ESTIMATORS,
  settings: Mapping[str, Any] | None = None,
  output: str | None = None,
  log: Callable[[str], None] = print,
  progress: bool = False,
) -> str:
  """``"<judgments>: P judged pairs"``, a blank line and the agreement table; the table
  alone is also written to ``output`` (markdown) when given.

  Args:
    captions_path: ``Flickr8k.token.txt`` (the captions the judgments refer to).
    judgments_path, judgments_format, expert_scores: as
      :func:`!read_judgments`.
    own_caption: as :func:`!build_protocol`.
    estimators, settings, progress: as :func:`!score_protocol`; one
      or more names (none, or an unknown one, is a ``ValueError`` before any file is read).
  """
  check_estimator_names(estimators)  # before the files are read
  captions = read_captions(captions_path, "flickr8k")
  judgments = agreement.read_judgments(judgments_path, judgments_format, expert_scores)
  protocol = agreement.build_protocol(judgments, captions, own_caption)
  log(f"{len(protocol.candidates)} judged pairs ({judgments.fmt})")
  scores = agreement.score_protocol(
    protocol, captions, estimators, settings=settings, log=log, progress=progress
  )
  rows = agreement.agreement_table(scores, protocol)
  published = agreement.PUBLISHED_CROWDFLOWER_TAU_B if judgments.fmt == "crowdflower" else None
  table = agreement.format_table(rows, protocol.tau_variant, published)
  if output:
    write_text_atomic(output, table + "\n")
  return f"{judgments.source}: {len(protocol.candidates)} judged pairs\n\n{table}"
