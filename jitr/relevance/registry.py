"""The relevance estimators by name: one registry that every app and config resolves through.

``ESTIMATORS`` maps a name to its class; :func:`make_estimator` builds one with
keyword hyper-parameters (see each class). The estimator modules import
nothing heavy at import time (torch, scikit-learn load on first use), so
listing them here costs little.

>>> sorted(ESTIMATORS)
['cider', 'lsa', 'sentence', 'tokens']
>>> make_estimator("lsa", k=8).params()["k"]
8
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jitr.relevance.cider_estimator import CiderEstimator
from jitr.relevance.estimator import RelevanceEstimator
from jitr.relevance.lsa import LsaEstimator
from jitr.relevance.sentence import SentenceEstimator
from jitr.relevance.token_coverage import TokenCoverageEstimator

ESTIMATORS: Mapping[str, type[RelevanceEstimator]] = {
  cls.name: cls for cls in (SentenceEstimator, CiderEstimator, LsaEstimator, TokenCoverageEstimator)
}


def make_estimator(name: str, **kwargs: Any) -> RelevanceEstimator:
  """A new estimator ``ESTIMATORS[name](**kwargs)``.

  Raises:
    ValueError: an unknown name, or keyword arguments the estimator does not take.

  >>> make_estimator("bm25")
  Traceback (most recent call last):
  ...
  ValueError: unknown estimator 'bm25' (expected one of ['cider', 'lsa', 'sentence', 'tokens'])
  """
  if name not in ESTIMATORS:
    raise ValueError(f"unknown estimator {name!r} (expected one of {sorted(ESTIMATORS)})")
  try:
    return ESTIMATORS[name](**kwargs)
  except TypeError as err:
    raise ValueError(f"estimator {name!r}: {err}") from None
