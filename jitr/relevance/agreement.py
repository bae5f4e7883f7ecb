"""Agreement of relevance estimators with human judgments (Kendall tau).

Protocol of the caption-metric literature (SPICE, CLIPScore appendix A), so the
numbers compare with published ones:

* every judged pair (image, candidate caption) is scored against the image's
  reference captions (its five Flickr8k captions);
* **CrowdFlower** (``image, caption-id, fraction-yes, #yes, #no``): the human
  score is the fraction of yes; a judged caption that is one of the image's
  own references is removed from that image's references *for all of its
  judgments* (``own_caption="remove"``); Kendall tau-b;
* **Expert** (``image, caption-id, s1, s2, s3`` with 1-4 scores): the human score
  is the mean of the three (``expert_scores="mean"``, or ``"separate"``: one
  judgment per expert score, as CLIPScore); pairs whose caption is one of the
  image's references are skipped (``own_caption="skip"``); Kendall tau-c;
* CIDEr-D's document frequencies are those of the scored reference sets (one
  per judgment), as in a single pycocoevalcap ``compute_score`` call.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from jitr import fileio, paths
from jitr.progress import Progress
from jitr.relevance.captions_io import CaptionSet, normalize_flickr_image_id
from jitr.relevance.estimator import RelevanceEstimator
from jitr.relevance.registry import default_estimator_settings, make_estimator_from_settings

FORMATS = ("crowdflower", "expert")


class JudgmentsFileError(ValueError):
  """A judgments file does not have the expected format."""


@dataclasses.dataclass(frozen=True)
class Judgments:
  """Human judgments of (image, caption) pairs.

  Attributes:
    source: the file read.
    fmt: ``crowdflower`` or ``expert``.
    image_ids: ``[P]`` image ids.
    caption_ids: ``[P]`` judged caption ids.
    scores: ``[P]`` float64 human scores.
  """

  source: str
  fmt: str
  image_ids: tuple[str, ...]
  caption_ids: tuple[str, ...]
  scores: np.ndarray

  @property
  def tau_variant(self) -> str:
    """``b`` for CrowdFlower (yes/no fractions), ``c`` for the expert 1-4 scale."""
    return "b" if self.fmt == "crowdflower" else "c"


def detect_judgments_format(path: str) -> str:
  """``crowdflower`` or ``expert`` from the file name (``CrowdFlowerAnnotations.txt``,
  ``ExpertAnnotations.txt``)."""
  name = os.path.basename(path).lower()
  if "crowdflower" in name:
    return "crowdflower"
  if "expert" in name:
    return "expert"
  raise JudgmentsFileError(
    f"{path}: cannot tell the judgments format from the file name; "
    "pass --judgments_format=crowdflower or expert"
  )


def read_judgments(path: str, fmt: str = "auto", expert_scores: str = "mean") -> Judgments:
  """Read a judgments file: ``image<TAB>caption-id<TAB>score columns`` per line.

  Args:
    path: the file.
    fmt: ``crowdflower`` (3rd column: fraction of yes), ``expert`` (columns 3-5:
      three 1-4 scores) or ``auto`` (from the file name).
    expert_scores: ``mean`` of the three expert scores per pair, or
      ``separate`` (one judgment per score).
  """
  if not paths.isfile(path):
    raise JudgmentsFileError(f"{path}: judgments file not found")
  fmt = detect_judgments_format(path) if fmt == "auto" else fmt
  if fmt not in FORMATS:
    raise JudgmentsFileError(
      f"{path}: unknown judgments format {fmt!r} (expected one of {FORMATS})"
    )
  if expert_scores not in ("mean", "separate"):
    raise ValueError(f"expert_scores must be 'mean' or 'separate', got {expert_scores!r}")
  try:
    lines = fileio.read_utf8_lines(path)
  except UnicodeError as err:  # names the file and line
    raise JudgmentsFileError(str(err)) from None
  images, caps, scores = [], [], []
  for k, line in enumerate(lines, start=1):
    if not line.strip():
      continue
    cols = line.rstrip("\r").split("\t")
    want = 3 if fmt == "crowdflower" else 5
    if len(cols) < want:
      raise JudgmentsFileError(
        f"{path}:{k}: {len(cols)} tab-separated columns, expected at least {want} ({fmt})"
      )
    try:
      values = [float(c) for c in cols[2:want]]
    except ValueError as err:
      raise JudgmentsFileError(f"{path}:{k}: score columns must be numbers ({err})") from err
    if fmt == "crowdflower":
      if not (0.0 <= values[0] <= 1.0 or math.isnan(values[0])):
        raise JudgmentsFileError(
          f"{path}:{k}: fraction of yes is {values[0]}, expected a value in [0, 1]"
        )
      per_row = [values[0]]
    else:
      if any(not 1.0 <= v <= 4.0 for v in values):
        raise JudgmentsFileError(
          f"{path}:{k}: expert scores {values}, expected three values in [1, 4]"
        )
      per_row = [sum(values) / 3.0] if expert_scores == "mean" else values
    for v in per_row:
      images.append(cols[0])
      caps.append(cols[1])
      scores.append(v)
  if not scores:
    raise JudgmentsFileError(f"{path}: no judgments")
  return Judgments(path, fmt, tuple(images), tuple(caps), np.asarray(scores, np.float64))


@dataclasses.dataclass(frozen=True)
class Protocol:
  """The scored pairs: candidate texts, their reference sets, human scores."""

  candidates: list[str]
  reference_sets: list[list[str]]
  human: np.ndarray
  image_ids: list[str]
  tau_variant: str


def build_protocol(
  judgments: Judgments, captions: CaptionSet, own_caption: str | None = None
) -> Protocol:
  """Candidates, references and human scores for ``judgments`` over ``captions``.

  Args:
    own_caption: what to do when a judged caption is one of the image's own
      references: ``remove`` it from the image's references for all of the
      image's judgments (CrowdFlower default), or ``skip`` the pair (expert default).
  """
  own_caption = own_caption or ("remove" if judgments.fmt == "crowdflower" else "skip")
  if own_caption not in ("remove", "skip"):
    raise ValueError(f"own_caption must be 'remove' or 'skip', got {own_caption!r}")
  text_of = dict(zip(captions.caption_ids, captions.captions))
  image_index = {img: i for i, img in enumerate(captions.image_ids)}
  refs: dict[str, list[str]] = {}
  keep: list[int] = []
  for p, (img, cid) in enumerate(zip(judgments.image_ids, judgments.caption_ids)):
    if cid not in text_of:
      raise JudgmentsFileError(
        f"{judgments.source}: caption id {cid!r} is not in {captions.source}"
      )
    key = normalize_flickr_image_id(img)
    if key not in image_index:
      raise JudgmentsFileError(f"{judgments.source}: image {img!r} is not in {captions.source}")
    if np.isnan(judgments.scores[p]):
      continue
    own = refs.setdefault(key, captions.references(image_index[key]))
    text = text_of[cid]
    if text in own:
      if own_caption == "skip":
        continue
      own.remove(text)  # for all of this image's judgments: the list is shared
    keep.append(p)
  sets = [refs[normalize_flickr_image_id(judgments.image_ids[p])] for p in keep]
  if any(not s for s in sets):
    raise JudgmentsFileError(
      f"{judgments.source}: an image has no reference left after removing judged captions"
    )
  return Protocol(
    candidates=[text_of[judgments.caption_ids[p]] for p in keep],
    reference_sets=sets,
    human=judgments.scores[keep],
    image_ids=[judgments.image_ids[p] for p in keep],
    tau_variant=judgments.tau_variant,
  )


def kendall_tau(scores: np.ndarray, human: np.ndarray, variant: str) -> float:
  """Kendall tau (``b`` or ``c``) between estimator scores and human scores (scipy)."""
  from scipy.stats import kendalltau

  return float(kendalltau(np.asarray(scores), np.asarray(human), variant=variant).statistic)


def rank_ensemble(score_lists: Sequence[np.ndarray]) -> np.ndarray:
  """Mean of the normalized ranks (ties averaged) of several score lists."""
  from scipy.stats import rankdata

  return np.mean([rankdata(s) / len(s) for s in score_lists], axis=0)


PUBLISHED_CROWDFLOWER_TAU_B: Mapping[str, float] = {
  "BLEU-4": 16.9,
  "CIDEr-D": 24.6,
  "RefCLIP-S": 36.4,
}


AGGREGATIONS = ("max", "mean", "smooth_max")  # a cosine estimator's rows
LITERATURE_NAMES: Mapping[str, str] = {"cider": "CIDEr-D"}  # as the published tables say
Pairs = tuple[Sequence[str], Sequence[Sequence[str]]]  # (candidates, reference sets)
Rows = tuple[dict[str, np.ndarray], str]  # (row name -> scores, the estimator's own row)


def _cosine_rows(name: str, estimator: RelevanceEstimator, pairs: Pairs) -> Rows:
  """``NAME (max)``, ``NAME (mean)``, ``NAME (smooth max)`` (log-mean-exp, T = 0.05); the
  estimator's own row is that of its ``aggregate`` setting."""
  rows = {
    f"{name} ({agg.replace('_', ' ')})": estimator.pair_scores(*pairs, aggregate=agg)
    for agg in AGGREGATIONS
  }
  return rows, f"{name} ({estimator.aggregate})"


def _coverage_rows(name: str, estimator: RelevanceEstimator, pairs: Pairs) -> Rows:
  """``NAME (coverage)``: token coverage (:mod:`jitr.relevance.token_coverage`)."""
  row = f"{name} (coverage)"
  return {row: estimator.pair_scores(*pairs)}, row


def _score_rows(name: str, estimator: RelevanceEstimator, pairs: Pairs) -> Rows:
  """One row, named as the literature names it (``cider`` -> ``CIDEr-D``)."""
  row = LITERATURE_NAMES.get(name, name)
  return {row: estimator.pair_scores(*pairs)}, row


# The rows of an estimator, by its relevance kind.
ROWS_BY_KIND: Mapping[str, Callable[[str, RelevanceEstimator, Pairs], Rows]] = {
  "cosine": _cosine_rows,
  "coverage": _coverage_rows,
  "score": _score_rows,
}


def score_protocol(
  protocol: Protocol,
  captions: CaptionSet,
  estimators: Sequence[str],
  *,
  settings: Mapping[str, Any] | None = None,
  log: Callable[[str], None] = print,
  progress: bool = False,
) -> dict[str, np.ndarray]:
  """Scores of every protocol pair for each estimator, with its aggregations and ensembles.

  Each estimator is built from ``settings`` (``{name: {keyword: value}}``; default:
  :func:`~jitr.relevance.registry.default_estimator_settings`); those with per-caption
  vectors (``sentence``, ``lsa``, ``tokens``) are fitted on ``captions`` (the whole caption
  corpus: LSA's vocabulary, token coverage's idf and codebook). Rows by relevance kind
  (:data:`ROWS_BY_KIND`): ``cider`` -> ``CIDEr-D``; ``sentence`` -> ``sentence (max)``
  (RSC), ``sentence (mean)``, ``sentence (smooth max)``, the same three for ``lsa``;
  ``tokens`` -> ``tokens (coverage)``. With several estimators, rank-mean ensembles of
  their own rows (``a + b (rank mean)``, and all of them from three on). ``progress``: one
  :class:`~jitr.progress.Progress` line on stderr, estimators scored of the total.
  """
  settings = default_estimator_settings() if settings is None else settings
  pairs = (protocol.candidates, protocol.reference_sets)
  out: dict[str, np.ndarray] = {}
  own: dict[str, np.ndarray] = {}
  with Progress(len(estimators), "estimators", label="agreement", enabled=progress) as shown:
    log_step = shown.wrap_log(log)
    for name in estimators:
      log_step(f"scoring {len(protocol.candidates)} pairs with {name}")
      estimator = make_estimator_from_settings(name, settings)
      if estimator.stores_vectors:
        estimator.fit(captions)
      rows, row = ROWS_BY_KIND[estimator.relevance_kind](name, estimator, pairs)
      out.update(rows)
      own[name] = rows[row]
      shown.advance()
  names = list(own)
  for a in range(len(names)):
    for b in range(a + 1, len(names)):
      out[f"{names[a]} + {names[b]} (rank mean)"] = rank_ensemble([own[names[a]], own[names[b]]])
  if len(names) >= 3:
    out[" + ".join(names) + " (rank mean)"] = rank_ensemble([own[n] for n in names])
  return out


def agreement_table(
  scores: Mapping[str, np.ndarray], protocol: Protocol
) -> list[tuple[str, float]]:
  """``(row name, 100 * Kendall tau)`` for each score list."""
  return [
    (name, 100.0 * kendall_tau(s, protocol.human, protocol.tau_variant))
    for name, s in scores.items()
  ]


def format_table(
  rows: Sequence[tuple[str, float]], variant: str, published: Mapping[str, float] | None = None
) -> str:
  """A markdown table of the agreement rows (and published reference rows)."""
  lines = [f"| estimator | Kendall tau-{variant} (x100) |", "|---|---:|"]
  lines += [f"| {name} | {tau:.1f} |" for name, tau in rows]
  for name, tau in (published or {}).items():
    lines.append(f"| {name} (published) | {tau:.1f} |")
  return "\n".join(lines)
