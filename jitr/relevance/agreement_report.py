"""``jitr-relevance-agreement``'s run: the Kendall tau of each estimator against people.

:func:`agreement_report` reads the captions and the judgments, builds the protocol
(:mod:`jitr.relevance.agreement`; how: :class:`ProtocolOptions`), scores it with each
estimator built from its settings, and returns the markdown table (tau-b for CrowdFlower,
with the published rows; tau-c for the expert file).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jitr.fileio import write_text_atomic
from jitr.relevance import agreement
from jitr.relevance.captions_io import read_captions
from jitr.relevance.registry import check_estimator_names

DEFAULT_ESTIMATORS = ("cider", "sentence", "lsa")


@dataclasses.dataclass(frozen=True)
class ProtocolOptions:
  """How :func:`agreement_report` reads the judgments and builds the protocol from them."""

  judgments_format: str = "auto"
  """``crowdflower``, ``expert`` or ``auto`` (from the file name): :func:`!read_judgments`."""
  expert_scores: str = "mean"
  """``mean`` of the three expert scores per pair, or ``separate`` (one judgment per
  score): :func:`!read_judgments`."""
  own_caption: str | None = None
  """A judged caption that is one of the image's references: ``remove`` it from the
  references or ``skip`` the pair; None: the format's default (:func:`!build_protocol`)."""


def agreement_report(
  captions_path: str,
  judgments_path: str,
  *,
  protocol: ProtocolOptions = ProtocolOptions(),
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
    judgments_path: the judgments file (:func:`!read_judgments`).
    protocol: how it is read and the protocol built (:class:`ProtocolOptions`).
    estimators, settings, progress: as :func:`!score_protocol`; one
      or more names (none, or an unknown one, is a ``ValueError`` before any file is read).
  """
  check_estimator_names(estimators)  # before the files are read
  captions = read_captions(captions_path, "flickr8k")
  judgments = agreement.read_judgments(
    judgments_path, protocol.judgments_format, protocol.expert_scores
  )
  built = agreement.build_protocol(judgments, captions, protocol.own_caption)
  log(f"{len(built.candidates)} judged pairs ({judgments.fmt})")
  scores = agreement.score_protocol(
    built, captions, estimators, settings=settings, log=log, progress=progress
  )
  rows = agreement.agreement_table(scores, built)
  published = agreement.PUBLISHED_CROWDFLOWER_TAU_B if judgments.fmt == "crowdflower" else None
  table = agreement.format_table(rows, built.tau_variant, published)
  if output:
    write_text_atomic(output, table + "\n")
  return f"{judgments.source}: {len(built.candidates)} judged pairs\n\n{table}"
