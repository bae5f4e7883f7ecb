"""A weighted sum of jitr losses, built from a config."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from jitr.losses.cmal2r import adaptive_listwise
from jitr.losses.listwise_itr import smooth_ndcg
from jitr.losses.lseh import semantic_hard_negatives
from jitr.losses.sam import semantic_margin_triplet
from jitr.losses.vse import triplet

# name -> (loss function, name of the graded input it takes positionally or None)
LOSSES: dict[str, tuple[Callable[..., jax.Array], str | None]] = {
  "triplet": (triplet, None),
  "smooth_ndcg": (smooth_ndcg, "relevance"),
  "adaptive_listwise": (adaptive_listwise, None),
  "semantic_margin_triplet": (semantic_margin_triplet, "metric"),
  "semantic_hard_negatives": (semantic_hard_negatives, "semantic"),
}

Objective = Callable[..., tuple[jax.Array, dict[str, jax.Array]]]


def _as_dict(config: Any) -> dict[str, Any]:
  return dict(config.to_dict() if hasattr(config, "to_dict") else config)


def objective(terms: Mapping[str, Any], *, steps_per_epoch: int | None = None) -> Objective:
  """Builds ``L = Σ_t w_t · 1[t active at step] · L_t`` from ``{name: {"weight": w, **hyper-parameters}}``.

  Each term's ``name`` is a loss of :data:`LOSSES` unless the term sets
  ``"loss"`` (so one loss can appear twice). Losses that need a graded matrix
  (``smooth_ndcg``: relevance, ``semantic_margin_triplet``: metric,
  ``semantic_hard_negatives``: semantic) read ``graded[term["input"]]``, where
  ``input`` defaults to ``"relevance"``; a single array for ``graded`` serves
  every term. A ``ml_collections.ConfigDict`` works as ``terms``.

  The returned function is pure and jit-able::

    loss_fn = objective({"triplet": {"weight": 1.0},
                         "smooth_ndcg": {"weight": 1.0, "temperature": 0.01}})
    total, parts = loss_fn(sim, positives=pos, graded=relevance)

  ``parts`` maps each term name to its unweighted value.

  Schedules: a term with ``"from_epoch": a`` and/or ``"until_epoch": b`` counts
  only for ``a · steps_per_epoch <= step < b · steps_per_epoch`` (``step`` is
  passed to ``loss_fn``; the train step passes ``state.step``). VSE∞'s
  sum-of-hinges warm-up before max-violation mining is::

    {"warmup": {"loss": "triplet", "mining": "sum", "until_epoch": 1},
     "triplet": {"mining": "max", "from_epoch": 1}}
  """
  specs = {}
  for name, raw in _as_dict(terms).items():
    spec = _as_dict(raw)
    loss_name = spec.pop("loss", name)
    if loss_name not in LOSSES:
      raise ValueError(
        f"objective term {name!r}: unknown loss {loss_name!r}; expected one of {sorted(LOSSES)}"
      )
    weight = float(spec.pop("weight", 1.0))
    graded_input = spec.pop("input", "relevance")
    window = _step_window(
      name, spec.pop("from_epoch", None), spec.pop("until_epoch", None), steps_per_epoch
    )
    specs[name] = (LOSSES[loss_name], weight, graded_input, spec, window)
  if not specs:
    raise ValueError("objective: expected at least one loss term, got none")

  def loss_fn(
    sim: jax.Array,
    *,
    positives: jax.Array | None = None,
    where: jax.Array | None = None,
    graded: jax.Array | Mapping[str, jax.Array] | None = None,
    key: jax.Array | None = None,
    step: jax.Array | int | None = None,
  ) -> tuple[jax.Array, dict[str, jax.Array]]:
    parts = {}
    total = jnp.zeros((), sim.dtype)
    keys = iter(jax.random.split(key, len(specs))) if key is not None else None
    for name, ((fn, needs), weight, graded_input, kwargs, window) in specs.items():
      args = [sim]
      if needs is not None:
        if graded is None:
          raise ValueError(
            f"objective term {name!r} ({fn.__name__}) needs graded={{{graded_input!r}: ...}}"
          )
        matrix = graded if not isinstance(graded, Mapping) else graded.get(graded_input)
        if matrix is None:
          raise ValueError(
            f"objective term {name!r}: graded has no {graded_input!r} (has {sorted(graded)})"
          )
        args.append(matrix)
      extra = {"key": next(keys)} if keys is not None and fn is semantic_margin_triplet else {}
      parts[name] = fn(*args, positives=positives, where=where, **kwargs, **extra)
      if window is None:
        total = total + weight * parts[name]
      else:
        if step is None:
          raise ValueError(f"objective term {name!r} has an epoch window; pass step=")
        active = (step >= window[0]) & (step < window[1])
        total = total + jnp.where(active, weight * parts[name], 0.0)
    return total, parts

  return loss_fn


def _step_window(
  name: str, start: Any, stop: Any, steps_per_epoch: int | None
) -> tuple[float, float] | None:
  """``[start, stop)`` in steps from ``from_epoch`` / ``until_epoch`` (None: always on)."""
  if start is None and stop is None:
    return None
  if not steps_per_epoch or steps_per_epoch <= 0:
    raise ValueError(
      f"objective term {name!r}: from_epoch/until_epoch need objective(..., steps_per_epoch=N)"
    )
  lo = 0.0 if start is None else float(start) * steps_per_epoch
  hi = float("inf") if stop is None else float(stop) * steps_per_epoch
  if not lo < hi:
    raise ValueError(
      f"objective term {name!r}: from_epoch ({start}) must be before until_epoch ({stop})"
    )
  return lo, hi
