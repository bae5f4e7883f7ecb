"""No score is reported from non-finite similarities.

:func:`jitr.evaluation.evaluate_retrieval` ranks a NaN score worst and counts the NaN /
+-inf entries of the similarity matrix as ``nonfinite_scores``; its numbers are then
those of a broken model, not a measurement. :func:`refuse_nonfinite_scores` is where
``jitr-eval`` and ``jitr-train`` (validation and the final test) stop instead of
reporting or writing them.
"""

from __future__ import annotations

from collections.abc import Mapping


class NonFiniteScoresError(ValueError):
  """A similarity matrix to be scored holds NaN or infinite entries."""


def nonfinite_count(metrics: Mapping[str, float]) -> int:
  """The ``nonfinite_scores`` of ``evaluate_retrieval``'s ``metrics`` (0 when absent)."""
  return int(metrics.get("nonfinite_scores", 0.0))


def refuse_nonfinite_scores(metrics: Mapping[str, float], scored: str) -> Mapping[str, float]:
  """``metrics`` when every similarity score was finite.

  Raises:
    NonFiniteScoresError: ``nonfinite_scores > 0``; one line with the count and
      ``scored`` (what was scored: the checkpoint and split).
  """
  count = nonfinite_count(metrics)
  if count > 0:
    raise NonFiniteScoresError(
      f"{scored}: {count} similarity score(s) are NaN or infinite; expected finite scores, "
      "so no metric is reported or written"
    )
  return metrics
