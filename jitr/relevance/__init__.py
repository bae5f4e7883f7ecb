"""Offline relevance estimators and their TFRecords.

* :mod:`!captions_io` -- caption files (precomp ``*_caps.txt``,
  ``Flickr8k.token.txt``) -> :class:`CaptionSet` with a fingerprint;
* :mod:`!tokenize` -- PTB tokenization as in pycocoevalcap;
* :mod:`!cider` -- vectorized CIDEr-D; :mod:`!cider_estimator`;
* :mod:`!sentence` -- Sentence-Transformers RSC;
* :mod:`!lsa` -- TF-IDF + truncated SVD (LSEH);
* :mod:`!estimator` -- the common interface, top-K selection;
* :mod:`!registry` -- the estimators by name (``make_estimator``) and their
  one default settings (``default_estimator_settings``, ``make_estimator_from_settings``);
* :mod:`!token_coverage` -- token coverage (a codebook of word pieces);
* :mod:`!records` -- the package of the resumable TFRecord writer:
  :mod:`!records.writer` (the writer),
  :mod:`!records.schema` (the features of a record),
  :mod:`!records.shards` (shards and workers),
  :mod:`!records.header` (the header and its identity),
  :mod:`!records.manifests` (completed shards, the header they determine),
  with :mod:`!temp_files` and :mod:`!checksums`;
* :mod:`!precompute` -- a caption file's relevance into records
  (``jitr-precompute``), also scores computed elsewhere (:mod:`!external_scores`: a scores
  file, :mod:`!scores_file`, checked against the captions by :mod:`!pair_scores`);
* :mod:`!agreement` -- agreement with human judgments (Kendall tau), and
  :mod:`!agreement_report` (``jitr-relevance-agreement``'s table);
* :mod:`!calibration_fit` -- the isotonic maps from estimator relevance to
  human judgments (``jitr-relevance-calibrate``).

Heavy dependencies (TensorFlow, torch, scikit-learn) are imported only where used.
"""

from jitr.relevance.agreement_report import ProtocolOptions, agreement_report
from jitr.relevance.calibration_fit import fit_calibration_tables
from jitr.relevance.captions_io import CaptionFileError, CaptionSet, read_captions
from jitr.relevance.cider import CiderD, cider_d
from jitr.relevance.estimator import RelevanceEstimator, TopK, select_top_k
from jitr.relevance.external_scores import ExternalScores
from jitr.relevance.precompute import (
  PrecomputeOptions,
  precompute_external_scores,
  precompute_relevance,
)
from jitr.relevance.records.writing import RecordsWriting
from jitr.relevance.registry import (
  ESTIMATORS,
  default_estimator_settings,
  make_estimator,
  make_estimator_from_settings,
)
from jitr.relevance.tokenize import ptb_tokenize

__all__ = [
  "agreement_report",
  "default_estimator_settings",
  "fit_calibration_tables",
  "make_estimator_from_settings",
  "precompute_external_scores",
  "precompute_relevance",
  "PrecomputeOptions",
  "ProtocolOptions",
  "RecordsWriting",
  "ESTIMATORS",
  "CaptionFileError",
  "CaptionSet",
  "CiderD",
  "ExternalScores",
  "RelevanceEstimator",
  "TopK",
  "cider_d",
  "make_estimator",
  "ptb_tokenize",
  "read_captions",
  "select_top_k",
]
