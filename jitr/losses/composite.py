"""A weighted sum of jitr losses, built from a config."""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jitr.losses import checks
from jitr.losses import query_rows as qr
from jitr.losses.adaptive_listwise import ADAPTIVE_LISTWISE
from jitr.losses.calibration import Calibration, parse_calibration
from jitr.losses.info_nce import INFO_NCE
from jitr.losses.semantic_hard_negatives import SEMANTIC_HARD_NEGATIVES
from jitr.losses.semantic_margin_triplet import SEMANTIC_MARGIN_TRIPLET
from jitr.losses.sigmoid_pairs import SIGMOID_PAIRS
from jitr.losses.smooth_ndcg import SMOOTH_NDCG
from jitr.losses.triplet import TRIPLET

#: A loss of the registry: its per-query formula and everything derived from it
#: (:class:`jitr.losses.query_rows.QueryLoss`): ``fn`` the functional loss, ``per_query``
#: its core on a block of query rows (direction weights folded into the loss; the
#: objective and the data-parallel train step only use this), ``graded`` the kind of
#: graded matrix it reads (None: none), ``needs_key`` whether it draws random numbers,
#: ``ranges`` its hyper-parameters' ranges.
LossSpec = qr.QueryLoss

#: The losses by the name an objective's terms use.
LOSSES: dict[str, LossSpec] = {
  spec.name: spec
  for spec in (
    TRIPLET,
    SMOOTH_NDCG,
    ADAPTIVE_LISTWISE,
    SEMANTIC_MARGIN_TRIPLET,
    SEMANTIC_HARD_NEGATIVES,
    INFO_NCE,
    SIGMOID_PAIRS,
  )
}

#: The fields of an objective term that are not its loss's hyper-parameters.
TERM_FIELDS = ("loss", "weight", "input", "reduction", "from_epoch", "until_epoch")

#: A hyper-parameter's value that the model learns (CLIP's ``logit_scale``, SigLIP's
#: ``logit_bias``): the objective takes it per step, ``partial_sums(..., learned=...)``.
LEARNED = "learned"


def learned_names(term: Mapping[str, Any]) -> tuple[str, ...]:
  """The hyper-parameters a term sets to :data:`!LEARNED`, sorted."""
  return tuple(sorted(k for k, v in term.items() if k not in TERM_FIELDS and v == LEARNED))


class PartialSums(NamedTuple):
  """One term's sums over a block of queries: ``Σ w·l`` and ``Σ w`` per direction.

  With ``reduction="sum"`` the counts are 0 (:meth:`Objective.combine` divides
  by ``max(Σ count, 1)``, so by 1: no normalisation).
  """

  image_to_text: jax.Array
  text_to_image: jax.Array
  image_count: jax.Array
  text_count: jax.Array


@dataclasses.dataclass(frozen=True)
class _Term:
  spec: LossSpec
  weight: float
  graded_input: str
  hyper: dict[str, Any]
  reduction: str
  window: tuple[float, float] | None
  calibration: Calibration | None = None
  learned: tuple[str, ...] = ()


class Objective:
  """``L = Σ_t w_t · 1[t active at step] · L_t``; see :func:`objective`.

  ``objective(sim, ...)`` computes it on a whole similarity matrix. A
  data-parallel step uses the split: :meth:`partial_sums` on a device's own
  query rows (its images against every caption, its captions against every
  image), the sums added across devices, then :meth:`combine`.
  """

  def __init__(self, terms: dict[str, _Term]):
    self.terms = terms

  @property
  def learned(self) -> tuple[str, ...]:
    """The hyper-parameters some term takes from the model (:data:`!LEARNED`), sorted."""
    return tuple(sorted({name for term in self.terms.values() for name in term.learned}))

  def __call__(
    self,
    sim: jax.Array,
    *,
    positives: jax.Array | None = None,
    where: jax.Array | None = None,
    graded: jax.Array | Mapping[str, jax.Array] | None = None,
    key: jax.Array | None = None,
    step: jax.Array | int | None = None,
    learned: Mapping[str, jax.Array] | None = None,
  ) -> tuple[jax.Array, dict[str, jax.Array]]:
    positives, where = qr.resolve_masks(sim, positives, where)
    matrices = self.graded_inputs(graded)
    i2t, t2i = qr.directions(sim, positives, where)
    rows = {
      name: (i2t._replace(graded=m), t2i._replace(graded=None if m is None else m.T))
      for name, m in matrices.items()
    }
    return self.combine(self.partial_sums(rows, key=key, learned=learned), step=step)

  def graded_inputs(
    self, graded: jax.Array | Mapping[str, jax.Array] | None
  ) -> dict[str, jax.Array | None]:
    """Each term's graded matrix (None for terms that take none); clear errors if missing."""
    out = {}
    for name, term in self.terms.items():
      if term.spec.graded is None:
        out[name] = None
        continue
      if graded is None:
        raise ValueError(
          f"objective term {name!r} ({term.spec.fn.__name__}) needs "
          f"graded={{{term.graded_input!r}: ...}} (its {term.spec.graded} matrix)"
        )
      matrix = graded if not isinstance(graded, Mapping) else graded.get(term.graded_input)
      if matrix is None:
        raise ValueError(
          f"objective term {name!r}: graded has no {term.graded_input!r} (has {sorted(graded)})"
        )
      out[name] = matrix
    return out

  def partial_sums(
    self,
    rows: Mapping[str, tuple[qr.QueryRows, qr.QueryRows]],
    *,
    key: jax.Array | None = None,
    learned: Mapping[str, jax.Array] | None = None,
  ) -> dict[str, PartialSums]:
    """Each term's :class:`PartialSums` over the given query rows.

    ``rows[name] = (image queries, caption queries)`` carry that term's graded
    rows. The sums of several blocks (devices) add up to the whole batch's.
    The counts come from masks only, so they carry no gradient. ``learned``: the values
    of the hyper-parameters terms set to :data:`!LEARNED` (the model's, with their
    gradient), by name.
    """
    keys = iter(jax.random.split(key, len(self.terms))) if key is not None else None
    out = {}
    for name, term in self.terms.items():
      term_key = next(keys) if keys is not None else None
      extra = {"key": term_key} if term.spec.needs_key else {}
      extra.update(self._learned_values(name, term, learned))
      sums = []
      for direction in rows[name]:
        if term.calibration:  # per query: each direction's own rows
          direction = direction._replace(
            graded=term.calibration(
              direction.graded, positives=direction.positives, where=direction.where
            )
          )
        loss, weight = term.spec.per_query(direction, **term.hyper, **extra)
        weight = weight.astype(loss.dtype)
        # "sum": count 0, so combine divides by max(Σ count, 1) = 1 however many blocks add up.
        count = jnp.sum(weight) if term.reduction == "mean" else jnp.zeros((), loss.dtype)
        sums.append((qr.masked_sum(loss, weight), jax.lax.stop_gradient(count)))
      out[name] = PartialSums(sums[0][0], sums[1][0], sums[0][1], sums[1][1])
    return out

  @staticmethod
  def _learned_values(
    name: str, term: _Term, learned: Mapping[str, jax.Array] | None
  ) -> dict[str, jax.Array]:
    """The values of ``term``'s learned hyper-parameters; one line for a missing one."""
    missing = [k for k in term.learned if learned is None or k not in learned]
    if missing:
      raise ValueError(
        f"objective term {name!r}: {missing[0]}={LEARNED!r} needs a model that learns "
        f"{missing[0]} (the 'clip' network)"
      )
    return {k: learned[k] for k in term.learned}

  def combine(
    self, sums: Mapping[str, PartialSums], *, step: jax.Array | int | None = None
  ) -> tuple[jax.Array, dict[str, jax.Array]]:
    """``(total, {name: unweighted term})`` from the (reduced) partial sums."""
    parts = {}
    total = None
    for name, term in self.terms.items():
      s = sums[name]
      value = s.image_to_text / jnp.maximum(s.image_count, 1.0) + s.text_to_image / jnp.maximum(
        s.text_count, 1.0
      )
      parts[name] = value
      contribution = term.weight * value
      if term.window is not None:
        if step is None:
          raise ValueError(f"objective term {name!r} has an epoch window; pass step=")
        active = (step >= term.window[0]) & (step < term.window[1])
        contribution = jnp.where(active, contribution, 0.0)
      total = contribution if total is None else total + contribution
    return total, parts


def _as_dict(config: Any) -> dict[str, Any]:
  return dict(config.to_dict() if hasattr(config, "to_dict") else config)


def objective(
  terms: Mapping[str, Any],
  *,
  steps_per_epoch: int | None = None,
  calibration: Mapping[str, Any] | None = None,
) -> Objective:
  """Builds ``L = Σ_t w_t · 1[t active at step] · L_t`` from ``{name: {"weight": w, **hyper}}``.

  Each term's ``name`` is a loss of :data:`LOSSES` unless the term sets
  ``"loss"`` (so one loss can appear twice). Losses that need a graded matrix
  (``smooth_ndcg``: relevance, ``semantic_margin_triplet``: metric,
  ``semantic_hard_negatives``: semantic) read ``graded[term["input"]]``, where
  ``input`` defaults to ``"relevance"``; a single array for ``graded`` serves
  every term. ``"reduction"`` is ``"mean"`` (default) or ``"sum"``. A
  ``ml_collections.ConfigDict`` works as ``terms``.

  The returned :class:`Objective` is pure and jit-able::

    loss_fn = objective({"triplet": {"weight": 1.0},
                         "smooth_ndcg": {"weight": 1.0, "temperature": 0.01}})
    total, parts = loss_fn(sim, positives=pos, graded=relevance)

  ``parts`` maps each term name to its unweighted value. Every term is computed
  through its loss's per-query core, so the same objective also runs split by
  query rows over devices (:meth:`Objective.partial_sums`).

  Learned hyper-parameters: a term's ``"logit_scale": "learned"`` (:data:`!LEARNED`) takes
  the value from the model at every step (``loss_fn(sim, ..., learned={"logit_scale":
  t})``; the train step passes the model's, with their gradient): CLIP's temperature
  and SigLIP's bias, while other terms read the same ``sim`` unscaled.

  Calibration: ``calibration`` maps a graded input name to a chain of
  :mod:`!jitr.losses.calibration` (``{"relevance": "minmax,power:2"}``; ``""``:
  none). Every term reading that input (relevance terms only) calibrates each
  direction's query rows before its loss: image queries per row, caption
  queries per column, so per-query transforms see whole queries on any number
  of devices.

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
    weight = spec.pop("weight", 1.0)
    checks.check_nonnegative(f"objective term {name!r}: weight", weight)
    weight = float(weight)
    graded_input = spec.pop("input", "relevance")
    reduction = spec.pop("reduction", "mean")
    if reduction not in ("mean", "sum"):
      raise ValueError(
        f"objective term {name!r}: reduction expected 'mean' or 'sum', got {reduction!r}"
      )
    window = _step_window(
      name, spec.pop("from_epoch", None), spec.pop("until_epoch", None), steps_per_epoch
    )
    learned = learned_names(spec)
    spec = {k: v for k, v in spec.items() if k not in learned}
    unknown = [k for k in learned if k not in LOSSES[loss_name].ranges]
    if unknown:
      raise ValueError(
        f"objective term {name!r}: {loss_name} has no hyper-parameter {unknown[0]!r}"
      )
    try:
      LOSSES[loss_name].hyper(spec)
    except TypeError as err:
      raise ValueError(f"objective term {name!r}: {err}") from None
    specs[name] = _Term(
      LOSSES[loss_name], weight, graded_input, spec, reduction, window, learned=learned
    )
  if not specs:
    raise ValueError("objective: expected at least one loss term, got none")
  return Objective(_with_calibration(specs, calibration))


def _with_calibration(
  specs: dict[str, _Term], calibration: Mapping[str, Any] | None
) -> dict[str, _Term]:
  """``specs`` with each relevance term's parsed calibration; errors name the input."""
  chains = {}
  for input_name, spec in _as_dict(calibration or {}).items():
    try:
      chains[input_name] = parse_calibration(spec)
    except ValueError as err:
      raise ValueError(f"calibration.{input_name}: {err}") from None
  out = dict(specs)
  for input_name, chain in chains.items():
    if not chain:
      continue
    readers = [n for n, t in specs.items() if t.spec.graded and t.graded_input == input_name]
    if not readers:
      raise ValueError(
        f"calibration.{input_name}: no objective term reads graded input {input_name!r}"
      )
    for term_name in readers:
      term = specs[term_name]
      if term.spec.graded != "relevance":
        raise ValueError(
          f"calibration.{input_name}: term {term_name!r} reads it as its {term.spec.graded} "
          "matrix; calibration applies to relevance in [0, 1] only"
        )
      out[term_name] = dataclasses.replace(term, calibration=chain)
  return out


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


def check_terms(terms: Mapping[str, Any], *, num_epochs: Any = None, field: str = "loss") -> None:
  """A config's objective terms (``config.loss``), each against the loss it names.

  Per term, in one line each: ``weight`` (a finite number >= 0), every hyper-parameter it
  sets against its loss's declared range (``LossSpec.ranges``), a field that is neither a
  term field (:data:`TERM_FIELDS`) nor a hyper-parameter of its loss, and a term that starts
  at or after the last epoch (``from_epoch >= num_epochs``, unless ``num_epochs`` is 0 and
  nothing trains), which would never train:
  ``config.FIELD.TERM.NAME: expected ..., got V``. A term that names no known loss is
  left to :func:`objective`.
  """
  for term_name in terms.keys():
    term = terms[term_name]
    if not hasattr(term, "keys"):
      continue
    prefix = f"{field}.{term_name}"
    if term.get("weight") is not None:
      checks.NONNEGATIVE.check_config(f"{prefix}.weight", term["weight"])
    loss_name = term.get("loss", term_name)
    spec = LOSSES.get(loss_name)
    if spec is not None:
      learned = learned_names(term)
      spec.check_config(prefix, {k: term[k] for k in term.keys() if k not in learned})
      for name in term.keys():
        if name not in TERM_FIELDS and name not in spec.ranges:
          raise ValueError(
            f"config.{prefix}.{name}: not a setting of {loss_name}; expected one of "
            f"{sorted((*TERM_FIELDS, *spec.ranges))}"
          )
    start = term.get("from_epoch")
    if (
      isinstance(num_epochs, int)
      and num_epochs > 0
      and isinstance(start, numbers.Real)
      and not isinstance(start, bool)
      and start >= num_epochs
    ):
      raise ValueError(
        f"config.{prefix}.from_epoch: expected less than config.num_epochs "
        f"({num_epochs}), got {start}: the term would never train; raise num_epochs or "
        "lower from_epoch"
      )
