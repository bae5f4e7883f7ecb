"""``jitr-relevance-calibrate``'s run: the isotonic map of each estimator's relevance to people.

For every judged (image, caption) pair of the CrowdFlower protocol
(:mod:`jitr.relevance.agreement`: the judged caption removed from its image's
references), ``x`` = the estimator's relevance ``clip(score / relevance_scale, 0, 1)``
(RSC for ``sentence``), ``y`` = the fraction of people who said yes; the isotonic
(non-decreasing) fit of ``y`` on ``x`` (:func:`~jitr.relevance.isotonic.isotonic_fit`) is
written as knots to ``<output_dir>/crowdflower-<estimator>.json`` (default: the tables
shipped in ``jitr/losses/calibration_tables``), which ``isotonic:crowdflower-<estimator>``
applies by linear interpolation (:mod:`jitr.losses.calibration`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from jitr import paths
from jitr.fileio import write_json_atomic
from jitr.losses.calibration import TABLES_DIR, check_table
from jitr.relevance import agreement
from jitr.relevance.captions_io import CaptionSet, read_captions
from jitr.relevance.isotonic import isotonic_fit
from jitr.relevance.registry import (
  check_estimator_names,
  default_estimator_settings,
  make_estimator_from_settings,
)


def fitted_table(name: str, x, y, *, source: str, params: dict) -> dict:
  """The JSON object of one fitted map: knots ``x``/``y`` (6 decimals) and how it was fitted."""
  kx, ky = isotonic_fit(np.round(np.asarray(x, np.float64), 6), y)  # knots stay distinct
  return {
    "estimator": name,
    "params": params,
    "judgments": os.path.basename(source),
    "pairs": int(len(x)),
    "fit": "isotonic regression (PAV), non-decreasing; x = estimator relevance, "
    "y = fraction of yes; applied by linear interpolation, constant beyond the ends",
    "command": "jitr-relevance-calibrate",
    "x": [float(v) for v in kx],
    "y": [round(float(v), 6) for v in np.clip(ky, 0.0, 1.0)],
  }


def protocol_relevance(estimator, protocol: agreement.Protocol, captions: CaptionSet) -> np.ndarray:
  """``clip(score / relevance_scale, 0, 1)`` of every protocol pair; an estimator with
  per-caption vectors is fitted on ``captions`` first (LSA's vocabulary, token idf)."""
  if estimator.stores_vectors:
    estimator.fit(captions)
  scores = estimator.pair_scores(protocol.candidates, protocol.reference_sets)
  return np.clip(np.asarray(scores, np.float64) / estimator.relevance_scale, 0.0, 1.0)


def fit_calibration_tables(
  captions_path: str,
  judgments_path: str,
  estimators: Sequence[str],
  *,
  settings: Mapping[str, Any] | None = None,
  output_dir: str | None = None,
  log: Callable[[str], None] = print,
) -> list[str]:
  """Fits and writes ``crowdflower-<estimator>.json`` for each estimator (built from
  ``settings``, default :func:`~jitr.relevance.registry.default_estimator_settings`) into
  ``output_dir`` (default: ``jitr/losses/calibration_tables``); returns one line per table
  written (``PATH: K knots from P judged pairs``)."""
  check_estimator_names(estimators)  # one or more known names, before the files are read
  settings = default_estimator_settings() if settings is None else settings
  captions = read_captions(captions_path, "flickr8k")
  judgments = agreement.read_judgments(judgments_path, "crowdflower")
  protocol = agreement.build_protocol(judgments, captions)
  out_dir = output_dir or TABLES_DIR
  paths.makedirs(out_dir)
  lines = []
  for name in estimators:
    estimator = make_estimator_from_settings(name, settings)
    log(f"scoring {len(protocol.candidates)} judged pairs with {name}")
    x = protocol_relevance(estimator, protocol, captions)
    table = fitted_table(
      name, x, protocol.human, source=judgments.source, params=estimator.params()
    )
    path = os.path.join(out_dir, f"crowdflower-{name}.json")
    check_table(table["x"], table["y"], path)
    write_json_atomic(path, table, indent=None, sort_keys=False)
    lines.append(f"{path}: {len(table['x'])} knots from {table['pairs']} judged pairs")
  return lines
