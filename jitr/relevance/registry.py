"""The relevance estimators by name: one registry that every app and config resolves through.

``ESTIMATORS`` maps a name to its class; :func:`make_estimator` builds one with
keyword hyper-parameters (see each class). Settings are one ConfigDict of every
estimator's keyword arguments (``config.estimators`` in ``jitr-train``, ``--config.estimators``
in the relevance apps): :func:`default_estimator_settings` is the one default (each
class's own keyword defaults, e.g. LSEH's ``lsa.k = 400``), and
:func:`make_estimator_from_settings` builds a named estimator from such settings. The
estimator modules import nothing heavy at import time (torch, scikit-learn load on first
use), so listing them here costs little.

>>> sorted(ESTIMATORS)
['cider', 'lsa', 'sentence', 'tokens']
>>> make_estimator("lsa", k=8).params()["k"]
8
>>> settings = default_estimator_settings()
>>> settings.lsa.k, settings.sentence.model
(400, 'all-MiniLM-L6-v2')
>>> settings.lsa.k = 64
>>> make_estimator_from_settings("lsa", settings).params()["k"]
64
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from jitr.relevance.cider_estimator import CiderEstimator
from jitr.relevance.estimator import RelevanceEstimator
from jitr.relevance.lsa import LsaEstimator
from jitr.relevance.sentence import SentenceEstimator
from jitr.relevance.token_coverage import TokenCoverageEstimator

#: The relevance estimator classes by name (``make_estimator(name)``).
ESTIMATORS: Mapping[str, type[RelevanceEstimator]] = {
  cls.name: cls for cls in (SentenceEstimator, CiderEstimator, LsaEstimator, TokenCoverageEstimator)
}


def make_estimator(name: str, **kwargs: Any) -> RelevanceEstimator:
  """A new estimator ``ESTIMATORS[name](**kwargs)`` (``cls(cls.settings_type(**kwargs))``
  for an estimator whose settings are one dataclass).

  Raises:
    ValueError: an unknown name, or keyword arguments the estimator does not take.

  >>> make_estimator("bm25")
  Traceback (most recent call last):
  ...
  ValueError: unknown estimator 'bm25' (expected one of ['cider', 'lsa', 'sentence', 'tokens'])
  """
  _check_known(name)
  cls = ESTIMATORS[name]
  try:
    return cls(cls.settings_type(**kwargs)) if cls.settings_type else cls(**kwargs)
  except TypeError as err:
    raise ValueError(f"estimator {name!r}: {err}") from None


def check_estimator_names(names: Sequence[str]) -> None:
  """Raises ``ValueError`` unless ``names`` lists one or more registered estimators.

  >>> check_estimator_names([])
  Traceback (most recent call last):
  ...
  ValueError: estimators: expected one or more of ['cider', 'lsa', 'sentence', 'tokens'], got none
  """
  if not names:
    raise ValueError(f"estimators: expected one or more of {sorted(ESTIMATORS)}, got none")
  for name in names:
    _check_known(name)


def _check_known(name: str) -> None:
  """Raises ``ValueError`` unless ``name`` is a registered estimator."""
  if name not in ESTIMATORS:
    raise ValueError(f"unknown estimator {name!r} (expected one of {sorted(ESTIMATORS)})")


def _keyword_defaults(cls: type[RelevanceEstimator]) -> dict[str, Any]:
  """``{keyword: default}`` of ``cls``'s constructor, or of its ``settings_type``'s fields
  (every one must have a default)."""
  out = {}
  for param in inspect.signature(cls.settings_type or cls).parameters.values():
    if param.default is inspect.Parameter.empty:
      raise TypeError(f"estimator {cls.name!r}: setting {param.name!r} has no default")
    out[param.name] = param.default
  return out


def default_estimator_settings() -> ml_collections.ConfigDict:  # noqa: F821 (imported inside)
  """``{name: {keyword: default}}`` of every registered estimator: the one default of the
  estimator settings, read from each class's constructor (a new ConfigDict per call, so a
  caller may override fields, e.g. ``settings.lsa.k = 64``)."""
  import ml_collections  # the train extra's: importing jitr.relevance does not need it

  return ml_collections.ConfigDict(
    {name: _keyword_defaults(cls) for name, cls in sorted(ESTIMATORS.items())}
  )


def estimators_config() -> ml_collections.ConfigDict:  # noqa: F821 (imported inside)
  """``{estimators: default_estimator_settings()}``: the default of the relevance apps'
  ``--config`` flag (the same field as ``jitr-train``'s ``config.estimators``)."""
  import ml_collections

  return ml_collections.ConfigDict({"estimators": default_estimator_settings()})


def make_estimator_from_settings(name: str, settings: Mapping[str, Any]) -> RelevanceEstimator:
  """``make_estimator(name, **settings[name])``; an estimator ``settings`` does not list
  takes its defaults (those of :func:`default_estimator_settings`).

  Raises:
    ValueError: an unknown name, or a setting the estimator does not take.
  """
  return make_estimator(name, **dict(settings.get(name) or {}))
