"""In-batch graded matrices (relevance, metric, semantic similarity) from stored data.

A spec maps each graded input a loss reads (``objective``'s ``input``) to a source:

* ``"vectors:NAME"`` — RSC relevance ``(1 + max_k cos(ref_ik, cap_j))/2`` from the
  caption vectors of a cosine estimator (``sentence``, ``lsa``), positives 1;
* ``"cosine:NAME"`` — the raw ``max_k cos(ref_ik, cap_j)`` in [−1, 1] (LSEH's S);
* ``"topk:NAME"`` — raw scores of an estimator's top-K lists (CIDEr-D for SAM's
  φ), 0 for captions outside an image's list; positives keep their score;
* ``"oracle"`` — the exact relevance of ``jitr_shapes``, positives 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp

from jitr import losses
from jitr.data.relevance_reader import relevance_from_topk

KINDS = ("vectors", "cosine", "topk")


def parse_source(source: str) -> tuple[str, str | None]:
  """``"vectors:sentence"`` -> ``("vectors", "sentence")``; ``"oracle"`` -> ``("oracle", None)``."""
  if source == "oracle":
    return "oracle", None
  kind, _, name = source.partition(":")
  if kind not in KINDS or not name:
    raise ValueError(
      f"graded source {source!r}: expected 'oracle' or one of "
      f"{[k + ':NAME' for k in KINDS]} (e.g. 'vectors:sentence', 'topk:cider')"
    )
  return kind, name


def make_graded_fn(
  spec: Mapping[str, str], *, scales: Mapping[str, float] | None = None
) -> Callable[[Mapping[str, jax.Array], jax.Array], dict[str, jax.Array]]:
  """``graded_fn(gathered_batch, positives) -> {input: [B, B]}`` for the train step.

  ``scales[NAME]`` is the largest score of estimator NAME's top-K lists (10 for
  CIDEr-D; the records header's ``relevance.scale``), default 1.
  """
  scales = dict(scales or {})
  parsed = {name: parse_source(source) for name, source in dict(spec).items()}

  def graded_fn(batch, positives):
    out = {}
    for name, (kind, estimator) in parsed.items():
      if kind == "oracle":
        out[name] = jnp.where(positives, 1.0, batch["oracle_relevance"])
      elif kind in ("vectors", "cosine"):
        rel = losses.relevance_from_embeddings(
          batch[f"vectors/{estimator}/references"], batch[f"vectors/{estimator}/captions"]
        )
        out[name] = jnp.where(positives, 1.0, rel) if kind == "vectors" else 2.0 * rel - 1.0
      else:
        scale = float(scales.get(estimator, 1.0))
        out[name] = scale * relevance_from_topk(
          batch[f"topk/{estimator}/indices"],
          batch[f"topk/{estimator}/scores"],
          batch["caption_indices"],
          scale=scale,
        )
    return out

  return graded_fn
