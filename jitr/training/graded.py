"""In-batch graded matrices (relevance, metric, semantic similarity) from stored data.

A spec maps each graded input a loss reads (``objective``'s ``input``) to a
source, resolved through the registry :data:`SOURCES` (parsed by
:func:`parse_source` only, here and wherever :mod:`jitr.experiment` reads a source: stored
relevance, teachers, ``jitr-relevance-quality``'s in-split relevance):

* ``"vectors:NAME"`` -- RSC relevance ``(1 + agg_k cos(ref_ik, cap_j))/2`` from the
  caption vectors of a cosine estimator (``sentence``, ``lsa``), positives 1;
* ``"cosine:NAME"`` -- the raw ``agg_k cos(ref_ik, cap_j)`` in [-1, 1] (LSEH's S);
* ``"coverage:NAME"`` -- token coverage ``clip(Σ_c h_j[c] · max_k m_ik[c], 0, 1)`` from
  the stored ``[m ; h]`` vectors of a coverage estimator (``tokens``,
  :mod:`jitr.relevance.token_coverage`): how much of caption j the image's
  references state, positives 1;
* ``"topk:NAME"`` -- raw scores of an estimator's top-K lists (CIDEr-D for SAM's
  phi), 0 for captions outside an image's list; positives keep their score;
* ``"oracle"`` -- the exact relevance of ``jitr_shapes``, positives 1;
* ``"labels"`` -- label overlap on a labelled vector dataset (``wiki``, ``pascal``): the
  Jaccard index ``|A_i ∩ B_j| / |A_i ∪ B_j|`` of the two pairs' class sets, positives 1
  (:func:`jitr.losses.relevance_from_labels`); it grades the pairs that share some
  classes, so it goes with ``config.labelled.positives = "pair"``;
* ``"constant"`` -- :data:`CONSTANT_RELEVANCE` (0.5) for every pair, positives 1: the
  uninformed baseline, which grades nothing beyond the annotated positives (what an
  estimator adds is measured against it, in training and in ``jitr-relevance-quality``);
* ``"teacher:WORKDIR"`` -- image-aware relevance ``(1 + cos(e_i, t_j))/2`` from the
  l2-normalised image and caption embeddings of a trained dual encoder (a
  ``jitr-train`` workdir of ``vse`` or ``vsrn``), precomputed once per checkpoint
  (:mod:`jitr.training.teacher`), positives 1. ``WORKDIR`` is everything after the
  first ``:``.

A *combination* ``"COMBINER:SOURCE|SOURCE[|...]"`` combines two or more of the above
elementwise through :data:`COMBINERS` -- ``hmean`` (harmonic mean ``2ab/(a+b)``, as
RefCLIP-S combines its image and reference scores) or ``mean`` -- e.g.
``"hmean:vectors:sentence|teacher:workdirs/vse"``; positives stay 1. The parts are
split on ``|`` (so a teacher workdir inside a combination may not contain ``|``) and
may not be combinations themselves.

Every builder is rectangular: ``graded_fn(images, captions, positives)`` builds
the ``[n_img, n_txt]`` matrix of one batch's image-side rows against another's
caption-side rows, so under data parallelism each device builds only its
queries' rows (its images against all captions, all images against its
captions), O(N²/D) per device. The oracle's stored rows span the global batch;
the caption side's ``pair_index`` (global column) picks their columns. The batch keys
of the stored data are those of :mod:`jitr.data.batch_keys`.

``agg`` is the estimator's aggregate over an image's references (``max`` or
``mean``), read from its records header (``RelevanceTable.aggregate``). The
matrices themselves come from :mod:`jitr.losses.relevance`. Their calibration
(``config.calibration``, :mod:`jitr.losses.calibration`) is applied by the
objective to each direction's query rows, not here: per-query transforms
(``minmax``) need a whole query, and only the loss knows which side queries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jitr.data.batch_keys import CLASS_LABELS, teacher_keys, topk_keys, vectors_keys
from jitr.losses import relevance as rel

Batch = Mapping[str, jax.Array]
# (image-side rows, caption-side rows, positives [n_img, n_txt], estimator, aggregate)
#   -> [n_img, n_txt]
Builder = Callable[[Batch, Batch, jax.Array, str | None, str], jax.Array]


@dataclasses.dataclass(frozen=True)
class SourceKind:
  """One kind of graded source.

  Attributes:
    stored: what the estimator's records hold for it: ``"vectors"``, ``"topk"``,
      ``"teacher"`` (a teacher workdir's embeddings), or ``None`` (no estimator: the
      oracle, the constant).
    build: the in-batch matrix from the batch's stored data.
    vectors_kind: for ``stored == "vectors"``, the relevance kind the estimator's
      vectors must have (its records header's ``relevance.kind``): ``"cosine"`` or
      ``"coverage"``.
    needs: what the dataset must have (a flag of :class:`jitr.data.DatasetInfo`):
      ``"exact_relevance"`` (the oracle), ``"class_labels"`` (label overlap), or ``None``.
  """

  stored: str | None
  build: Builder
  vectors_kind: str | None = None
  needs: str | None = None


CONSTANT_RELEVANCE = 0.5  # the "constant" source's relevance of every non-positive pair


def _references(images, captions, estimator):
  caption_key, references_key = vectors_keys(estimator)
  return images[references_key], captions[caption_key]


def _rsc(images, captions, positives, estimator, aggregate):
  refs, caps = _references(images, captions, estimator)
  return rel.relevance_from_embeddings(refs, caps, positives=positives, aggregate=aggregate)


def _cosine(images, captions, positives, estimator, aggregate):
  refs, caps = _references(images, captions, estimator)
  return rel.reference_cosine(refs, caps, aggregate=aggregate)


def _coverage(images, captions, positives, estimator, aggregate):
  refs, caps = _references(images, captions, estimator)
  return rel.relevance_from_token_coverage(refs, caps, positives=positives)


def _topk(images, captions, positives, estimator, aggregate):
  indices_key, scores_key = topk_keys(estimator)
  return rel.topk_score_matrix(images[indices_key], images[scores_key], captions["caption_indices"])


def _oracle(images, captions, positives, estimator, aggregate):
  rows = images["oracle_relevance"]  # [n_img, N]: each image against the global batch
  if "pair_index" in captions:
    rows = jnp.take(rows, captions["pair_index"], axis=1)
  return jnp.where(positives, 1.0, rows)


def _labels(images, captions, positives, estimator, aggregate):
  return rel.relevance_from_labels(
    images[CLASS_LABELS], captions[CLASS_LABELS], positives=positives
  )


def _constant(images, captions, positives, estimator, aggregate):
  return jnp.where(positives, 1.0, CONSTANT_RELEVANCE)


def _teacher(images, captions, positives, estimator, aggregate):
  image_key, caption_key = teacher_keys(estimator)
  return rel.relevance_from_pair_embeddings(
    images[image_key], captions[caption_key], positives=positives
  )


SOURCES: Mapping[str, SourceKind] = {
  "vectors": SourceKind("vectors", _rsc, "cosine"),
  "cosine": SourceKind("vectors", _cosine, "cosine"),
  "coverage": SourceKind("vectors", _coverage, "coverage"),
  "topk": SourceKind("topk", _topk),
  "oracle": SourceKind(None, _oracle, needs="exact_relevance"),
  "labels": SourceKind(None, _labels, needs="class_labels"),
  "constant": SourceKind(None, _constant),
  "teacher": SourceKind("teacher", _teacher),
}

# Elementwise combinations of two or more relevance matrices ("hmean:A|B").
COMBINERS: Mapping[str, Callable[..., jax.Array]] = {
  "hmean": rel.harmonic_mean_relevance,
  "mean": rel.arithmetic_mean_relevance,
}
PART_SEPARATOR = "|"


class GradedSource(NamedTuple):
  """A parsed plain source: its kind (a key of :data:`SOURCES`) and the estimator it
  reads (for a teacher: its workdir)."""

  kind: str
  estimator: str | None

  @property
  def stored(self) -> str | None:
    """``"vectors"``, ``"topk"``, ``"teacher"`` or ``None``: what must be stored for it."""
    return SOURCES[self.kind].stored

  def leaves(self) -> tuple[GradedSource, ...]:
    """The plain sources it reads: itself."""
    return (self,)

  def spec(self) -> str:
    """The source as written: ``parse_source(src.spec()) == src``."""
    return self.kind if self.estimator is None else f"{self.kind}:{self.estimator}"


class CombinedSource(NamedTuple):
  """A parsed combination: its combiner (a key of :data:`COMBINERS`) and its parts."""

  kind: str
  parts: tuple[GradedSource, ...]

  def leaves(self) -> tuple[GradedSource, ...]:
    """The plain sources it reads: its parts."""
    return self.parts

  def spec(self) -> str:
    """The source as written: ``parse_source(src.spec()) == src``."""
    return f"{self.kind}:" + PART_SEPARATOR.join(p.spec() for p in self.parts)


def check_vectors_kind(source: GradedSource, relevance_kind: str) -> None:
  """Refuse a vectors source whose estimator stores the other kind of vectors
  (``relevance_kind``), e.g. ``vectors:tokens`` (RSC over coverage profiles) or
  ``coverage:sentence``."""
  wanted = SOURCES[source.kind].vectors_kind
  if wanted is not None and relevance_kind != wanted:
    right = [k for k, s in SOURCES.items() if s.vectors_kind == relevance_kind]
    raise ValueError(
      f"graded source {source.spec()!r}: {source.kind}: reads {wanted} vectors, but the "
      f"{source.estimator} estimator's are {relevance_kind}"
      + (f"; use {right[-1]}:{source.estimator}" if right else "")
    )


def _source_forms() -> list[str]:
  forms = [k if s.stored is None else f"{k}:NAME" for k, s in SOURCES.items()]
  return forms + [f"{k}:SOURCE|SOURCE" for k in COMBINERS]


def _parse_plain(source: str, whole: str) -> GradedSource:
  kind, colon, name = source.partition(":")
  entry = SOURCES.get(kind)
  reads_estimator = entry is not None and entry.stored is not None
  if entry is None or (reads_estimator and not name) or (not reads_estimator and colon):
    raise ValueError(
      f"graded source {whole!r}: expected one of {_source_forms()} (e.g. 'vectors:sentence', "
      "'topk:cider', 'coverage:tokens', 'teacher:workdirs/vse', "
      "'hmean:vectors:sentence|teacher:workdirs/vse')"
    )
  return GradedSource(kind, name or None)


def parse_source(source: str) -> GradedSource | CombinedSource:
  """``"vectors:sentence"`` -> ``("vectors", "sentence")``; ``"oracle"`` -> ``("oracle", None)``;
  ``"hmean:A|B"`` -> ``CombinedSource("hmean", (parse(A), parse(B)))``.

  >>> parse_source("topk:cider"), parse_source("topk:cider").stored
  (GradedSource(kind='topk', estimator='cider'), 'topk')
  >>> [p.kind for p in parse_source("hmean:vectors:sentence|teacher:runs/vse:1").parts]
  ['vectors', 'teacher']
  """
  whole = str(source)
  kind, _, rest = whole.partition(":")
  if kind not in COMBINERS:
    return _parse_plain(whole, whole)
  parts = tuple(_parse_plain(p, whole) for p in rest.split(PART_SEPARATOR))
  if len(parts) < 2:
    raise ValueError(
      f"graded source {whole!r}: {kind} combines two or more sources separated by "
      f"{PART_SEPARATOR!r}, e.g. '{kind}:vectors:sentence|teacher:workdirs/vse'"
    )
  return CombinedSource(kind, parts)


def _build(
  src: GradedSource | CombinedSource, aggregates: Mapping[str, str]
) -> Callable[..., jax.Array]:
  """``build(images, captions, positives) -> [n_img, n_txt]`` of one parsed source."""
  if isinstance(src, CombinedSource):
    parts = [_build(p, aggregates) for p in src.parts]
    combine = COMBINERS[src.kind]
    return lambda images, captions, positives: jnp.where(
      positives, 1.0, combine(*(part(images, captions, positives) for part in parts))
    )
  build, aggregate = SOURCES[src.kind].build, aggregates.get(src.estimator)
  return lambda images, captions, positives: build(
    images, captions, positives, src.estimator, aggregate
  )


def make_graded_fn(
  spec: Mapping[str, str], *, aggregates: Mapping[str, str] | None = None
) -> Callable[[Batch, Batch, jax.Array], dict[str, jax.Array]]:
  """``graded_fn(images, captions, positives) -> {input: [n_img, n_txt]}`` for the train step.

  ``images`` and ``captions`` are batches (the same one for the whole in-batch
  matrix, ``graded_fn(batch, batch, positives)``); the image side's rows
  against the caption side's rows.

  Args:
    spec: graded input name -> source (see the module docstring).
    aggregates: estimator name -> ``"max"`` or ``"mean"``, for every estimator a
      ``vectors:`` or ``cosine:`` source reads (its records header's
      ``params.aggregate``; ``stored_relevance`` of the apps returns them).

  Raises:
    ValueError: a bad source, or a vectors estimator without an aggregate.
  """
  aggregates = dict(aggregates or {})
  parsed = {name: parse_source(source) for name, source in dict(spec).items()}
  for name, whole in parsed.items():
    for src in whole.leaves():
      if src.stored == "vectors" and aggregates.get(src.estimator) not in rel.AGGREGATES:
        raise ValueError(
          f"graded input {name!r} ({src.kind}:{src.estimator}): aggregates[{src.estimator!r}] "
          f"is {aggregates.get(src.estimator)!r}, expected one of {rel.AGGREGATES} "
          "(the records header's params.aggregate)"
        )
  builders = {name: _build(src, aggregates) for name, src in parsed.items()}

  def graded_fn(images, captions, positives):
    return {name: build(images, captions, positives) for name, build in builders.items()}

  return graded_fn
