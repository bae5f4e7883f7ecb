"""The in-split relevance of a graded source: what training would build over a whole split.

:func:`estimated_relevance` parses a graded source (:func:`jitr.training.graded.parse_source`,
the language of ``config.graded``) and maps each plain source to its ``[N_img, N_cap]``
relevance over one split through :data:`IN_SPLIT`, keyed by the source's kind:

* ``vectors:NAME`` / ``coverage:NAME`` / ``topk:NAME`` -- the estimator built from its
  settings and fitted on the split's own captions (as training fits it on train's),
  ``clip(score / relevance_scale, 0, 1)`` of every caption for every image: RSC
  ``(1 + agg_k cos)/2`` over the image's references, token coverage, CIDEr-D / 10 over all
  captions rather than a top-K list;
* ``oracle`` -- the exact relevance; ``constant`` -- ``CONSTANT_RELEVANCE`` (0.5);
* ``teacher:WORKDIR`` -- ``(1 + cos(e_i, t_j))/2`` of the teacher's embeddings of the split;
* ``hmean:A|B`` / ``mean:A|B`` -- the parts combined by the training combiners
  (:data:`jitr.training.graded.COMBINERS`).

Annotated positives are 1. ``cosine:NAME`` has no in-split relevance: it is LSEH's
similarity in [-1, 1], not a relevance (``vectors:NAME`` is its relevance).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from jitr import losses
from jitr.relevance.captions_io import CaptionSet
from jitr.relevance.registry import default_estimator_settings, make_estimator_from_settings
from jitr.training.graded import (
  COMBINERS,
  CONSTANT_RELEVANCE,
  CombinedSource,
  GradedSource,
  check_vectors_kind,
  parse_source,
)

# workdir -> (images [N_img, D], captions [N_cap, D]) embeddings of the split
TeacherLookup = Callable[[str], tuple[Any, Any]]


@dataclasses.dataclass(frozen=True)
class SplitData:
  """What an in-split relevance is computed from.

  Attributes:
    captions: the split's captions (every image with its references).
    exact: ``[N_img, N_cap]`` exact relevance, or ``None`` (no ``oracle``).
    settings: ``{estimator: {keyword: value}}`` (``config.estimators``).
    teacher: the teachers' embeddings of the split, or ``None`` (no ``teacher:``).
  """

  captions: CaptionSet
  exact: np.ndarray | None
  settings: Mapping[str, Any]
  teacher: TeacherLookup | None = None

  @property
  def shape(self) -> tuple[int, int]:
    return self.captions.num_images, self.captions.num_captions


def _fitted(source: GradedSource, split: SplitData) -> np.ndarray:
  estimator = make_estimator_from_settings(source.estimator, split.settings)
  check_vectors_kind(source, estimator.relevance_kind)
  scores = estimator.fit(split.captions).image_scores(np.arange(split.captions.num_images))
  return np.clip(np.asarray(scores, np.float64) / estimator.relevance_scale, 0.0, 1.0)


def _oracle(source: GradedSource, split: SplitData) -> np.ndarray:
  if split.exact is None:
    raise ValueError("graded source 'oracle': this split has no exact relevance")
  return np.asarray(split.exact, np.float32)


def _constant(source: GradedSource, split: SplitData) -> np.ndarray:
  return np.full(split.shape, CONSTANT_RELEVANCE, np.float32)


def _teacher(source: GradedSource, split: SplitData) -> np.ndarray:
  if split.teacher is None:
    raise ValueError(f"graded source {source.spec()!r}: no teacher embeddings of the split given")
  images, captions = split.teacher(source.estimator)
  return np.asarray(losses.relevance_from_pair_embeddings(images, captions))


IN_SPLIT: Mapping[str, Callable[[GradedSource, SplitData], np.ndarray]] = {
  "vectors": _fitted,
  "coverage": _fitted,
  "topk": _fitted,
  "oracle": _oracle,
  "constant": _constant,
  "teacher": _teacher,
}


def parse_in_split(source: str) -> GradedSource | CombinedSource:
  """``parse_source(source)``, refusing a source with no in-split relevance (``cosine:``)."""
  parsed = parse_source(source)
  for leaf in parsed.leaves():
    if leaf.kind not in IN_SPLIT:
      raise ValueError(
        f"graded source {source!r}: {leaf.kind}: has no in-split relevance (expected one of "
        f"{sorted(IN_SPLIT)}; cosine:NAME is a similarity in [-1, 1], vectors:NAME its relevance)"
      )
  return parsed


def positives_of(captions: CaptionSet) -> np.ndarray:
  """``[N_img, N_cap]`` bool: caption j is one of image i's own captions."""
  owner = np.repeat(np.arange(captions.num_images), np.diff(captions.image_offsets))
  return owner[None, :] == np.arange(captions.num_images)[:, None]


def estimated_relevance(
  source: str,
  captions: CaptionSet,
  exact: np.ndarray | None = None,
  *,
  settings: Mapping[str, Any] | None = None,
  teacher: TeacherLookup | None = None,
) -> tuple[np.ndarray, np.ndarray]:
  """``(relevance [N_img, N_cap] float32, positives [N_img, N_cap] bool)`` of the graded
  ``source`` over ``captions`` (see the module docstring), positives 1; a combination's parts
  have their positives at 1 before they are combined, as in training.

  Args:
    settings: the estimators' settings (default
      :func:`~jitr.relevance.registry.default_estimator_settings`).
    teacher: ``workdir -> (images, captions)`` embeddings, for ``teacher:`` sources.
  """
  parsed = parse_in_split(source)
  settings = default_estimator_settings() if settings is None else settings
  split = SplitData(captions, exact, settings, teacher)
  positives = positives_of(captions)
  leaf_relevance = {  # each part with its positives at 1, as the graded builders give it
    leaf: np.where(positives, 1.0, IN_SPLIT[leaf.kind](leaf, split)) for leaf in parsed.leaves()
  }
  if isinstance(parsed, CombinedSource):
    relevance = COMBINERS[parsed.kind](*(leaf_relevance[p] for p in parsed.parts))
  else:
    relevance = leaf_relevance[parsed]
  return np.where(positives, 1.0, np.asarray(relevance)).astype(np.float32), positives
