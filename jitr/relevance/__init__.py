"""Offline relevance estimators and their TFRecords.

* :mod:`~jitr.relevance.captions_io` -- caption files (precomp ``*_caps.txt``,
  ``Flickr8k.token.txt``) -> :class:`CaptionSet` with a fingerprint;
* :mod:`~jitr.relevance.tokenize` -- PTB tokenization as in pycocoevalcap;
* :mod:`~jitr.relevance.cider` -- vectorized CIDEr-D; :mod:`~jitr.relevance.cider_estimator`;
* :mod:`~jitr.relevance.sentence` -- Sentence-Transformers RSC;
* :mod:`~jitr.relevance.lsa` -- TF-IDF + truncated SVD (LSEH);
* :mod:`~jitr.relevance.estimator` -- the common interface, top-K selection;
* :mod:`~jitr.relevance.registry` -- the estimators by name (``make_estimator``);
* :mod:`~jitr.relevance.records` -- the resumable TFRecord writer, from
  :mod:`~jitr.relevance.record_schema` (the features of a record),
  :mod:`~jitr.relevance.record_shards` (shards and workers),
  :mod:`~jitr.relevance.record_header` (the header and its identity),
  :mod:`~jitr.relevance.record_manifests` (completed shards, the header they determine),
  :mod:`~jitr.relevance.temp_files` and :mod:`~jitr.relevance.checksums`;
* :mod:`~jitr.relevance.agreement` -- agreement with human judgments (Kendall tau).

Heavy dependencies (TensorFlow, torch, scikit-learn) are imported only where used.
"""

from jitr.relevance.captions_io import CaptionFileError, CaptionSet, read_captions
from jitr.relevance.cider import CiderD, cider_d
from jitr.relevance.estimator import RelevanceEstimator, TopK, select_top_k
from jitr.relevance.registry import ESTIMATORS, make_estimator
from jitr.relevance.tokenize import ptb_tokenize

__all__ = [
  "ESTIMATORS",
  "CaptionFileError",
  "CaptionSet",
  "CiderD",
  "RelevanceEstimator",
  "TopK",
  "cider_d",
  "make_estimator",
  "ptb_tokenize",
  "read_captions",
  "select_top_k",
]
