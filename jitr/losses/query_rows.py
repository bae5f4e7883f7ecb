"""Query rows, masks and directions: the one shape every loss of :mod:`jitr.losses` has.

A similarity matrix ``sim [N_img, N_txt]`` has image queries on its rows and caption
candidates on its columns; text->image is the same computation on ``sim.T`` (and on the
transposed masks and graded matrix). Masks follow rax: ``where`` marks valid entries
(padding is ``False``), ``positives`` marks annotated pairs (several captions of one
image are all positives, never negatives).

Every loss is written once, as the formula of one query,
``formula(query: Query, *, **hyper) -> (loss, counts)`` with its hyper-parameters
keyword-only and their defaults in its signature, and a :class:`!QueryLoss` beside it that
declares the range of each hyper-parameter (:mod:`!jitr.losses.checks`), the graded matrix
it reads, whether it draws random numbers and its direction weights. :class:`!QueryLoss`
derives the rest: the core on a block of query rows of one direction,
``core(rows: QueryRows, *, key, **hyper) -> (loss [Q], weight [Q])`` (the formula mapped
over the rows), and the whole-matrix function, :func:`both_ways` of that core (the rows of
``sim`` and of ``sim.T``) reduced with the direction weights. The registry
(:data:`jitr.losses.LOSSES`), ``objective`` and the data-parallel train step call the
same cores on any block of rows (a device's own queries against all candidates).

Reduction (``reduction=``, every loss):

* ``"mean"`` (default): ``a·Σ_i w_i·l_i / max(Σ_i w_i, 1) + b·Σ_j w_j·l_j / max(Σ_j w_j, 1)``
  over image queries i and caption queries j, the mean of each direction over the
  queries that count (weight 1; padded or degenerate queries have weight 0);
* ``"sum"``: ``a·Σ_i w_i·l_i + b·Σ_j w_j·l_j`` (the VSE++ / SAM code's convention);
* ``"none"``: the per-query values and weights as a :class:`~jitr.losses.DirectionalLoss`, not
  weighted by direction.

``a`` and ``b`` are the direction weights (1 and 1; CMAL²R's α and 1 − α). A query of
weight 0 never contributes, even when its loss is not finite.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple

import chex
import jax
import jax.numpy as jnp

from jitr.losses import checks

Reduction = Literal["mean", "sum", "none"]
REDUCTIONS = ("mean", "sum", "none")

#: ``QueryRows.direction`` of image queries (rows of ``sim``) and caption queries (rows of
#: ``sim.T``).
IMAGE_TO_TEXT, TEXT_TO_IMAGE = 0, 1


class DirectionalLoss(NamedTuple):
  """Per-query losses of both directions (``reduction="none"``).

  Attributes:
    image_to_text: ``[N_img]`` loss of each image query (rows of ``sim``).
    text_to_image: ``[N_txt]`` loss of each caption query (columns of ``sim``).
    image_weight: ``[N_img]`` 1 for queries that count, 0 for padded or
      degenerate ones (no valid positive / no relevant item).
    text_weight: ``[N_txt]`` the same for caption queries.
  """

  image_to_text: jax.Array
  text_to_image: jax.Array
  image_weight: jax.Array
  text_weight: jax.Array


class QueryRows(NamedTuple):
  """A block of query rows of one direction: what a per-query loss core sees.

  Every loss is a per-query core ``core(rows, *, key, **hyper) -> (loss [Q],
  weight [Q])``; the full loss is the core on all image queries (rows of
  ``sim``) and all caption queries (rows of ``sim.T``), reduced as the module
  documentation says. Because a query's terms only need its own row, a
  device can compute the terms of its own queries against the gathered
  candidates and the partial sums are added across devices (see
  ``jitr.training.step``).

  Attributes:
    sim: ``[Q, C]`` scores of each query against every candidate.
    positives: bool ``[Q, C]`` annotated pairs.
    where: bool ``[Q, C]`` valid pairs.
    graded: ``[Q, C]`` graded matrix rows (relevance, metric, semantic) or None.
    index: int ``[Q]`` global index of each query in its direction (random
      draws are keyed by it, so they do not depend on how rows are split).
    direction: :data:`!IMAGE_TO_TEXT` or :data:`!TEXT_TO_IMAGE` (a Python int).
  """

  sim: jax.Array
  positives: jax.Array
  where: jax.Array
  graded: jax.Array | None
  index: jax.Array
  direction: int


Core = Callable[..., tuple[jax.Array, jax.Array]]


def directions(
  sim: jax.Array,
  positives: jax.Array,
  where: jax.Array,
  graded: jax.Array | None = None,
) -> tuple[QueryRows, QueryRows]:
  """All image queries (rows of ``sim``) and all caption queries (rows of ``sim.T``)."""
  n_img, n_txt = sim.shape
  gt = None if graded is None else graded.T
  return (
    QueryRows(sim, positives, where, graded, jnp.arange(n_img), IMAGE_TO_TEXT),
    QueryRows(sim.T, positives.T, where.T, gt, jnp.arange(n_txt), TEXT_TO_IMAGE),
  )


def without_padding(rows: QueryRows) -> QueryRows:
  """``rows`` with the padded entries (``where`` False) of ``sim`` and ``graded`` set to 0.

  Every per-query core starts with it, so padding never matters to a loss or
  its gradient, even when NaN, however the rows were built (the train step
  builds them per device).
  """
  sim = jnp.where(rows.where, rows.sim, jnp.zeros((), rows.sim.dtype))
  graded = rows.graded
  if graded is not None:
    graded = jnp.where(rows.where, graded, jnp.zeros((), graded.dtype))
  return rows._replace(sim=sim, graded=graded)


def row_keys(key: jax.Array, rows: QueryRows) -> jax.Array:
  """One key per query: ``fold_in(split(key)[direction], global_index)``.

  Independent of how the queries are split into blocks (or devices).
  """
  direction_key = jax.random.split(key)[rows.direction]
  return jax.vmap(lambda i: jax.random.fold_in(direction_key, i))(rows.index)


def resolve_masks(
  sim: jax.Array,
  positives: jax.Array | None,
  where: jax.Array | None,
) -> tuple[jax.Array, jax.Array]:
  """Returns boolean ``(positives, where)`` of ``sim``'s shape.

  ``positives`` defaults to the identity (one caption per image, matched on the
  diagonal), which needs a square ``sim``; ``where`` defaults to all valid and
  may be anything broadcastable to ``sim.shape`` (e.g. ``img_valid[:, None] &
  txt_valid[None, :]``, see :func:`pair_mask`).
  """
  chex.assert_rank(sim, 2)
  n_img, n_txt = sim.shape
  if positives is None:
    if n_img != n_txt:
      raise ValueError(
        f"positives: required when sim is not square (sim has shape "
        f"{sim.shape}); pass a bool [N_img, N_txt] mask of annotated pairs"
      )
    positives = jnp.eye(n_img, dtype=bool)
  else:
    chex.assert_shape(positives, sim.shape)
    positives = positives.astype(bool)
  if where is None:
    where = jnp.ones(sim.shape, dtype=bool)
  else:
    where = jnp.broadcast_to(where, sim.shape).astype(bool)
  return positives, where


def pair_mask(image_valid: jax.Array, text_valid: jax.Array) -> jax.Array:
  """``where`` for a padded batch: ``where[i, j] = image_valid[i] & text_valid[j]``."""
  chex.assert_rank([image_valid, text_valid], 1)
  return image_valid.astype(bool)[:, None] & text_valid.astype(bool)[None, :]


def masked_mean(values: jax.Array, weights: jax.Array) -> jax.Array:
  """``Σ w·v / max(Σ w, 1)`` with zero-weight entries ignored even if not finite."""
  return masked_sum(values, weights) / jnp.maximum(jnp.sum(weights), 1.0)


def masked_sum(values: jax.Array, weights: jax.Array) -> jax.Array:
  """``Σ w·v`` with zero-weight entries ignored even if not finite."""
  return jnp.sum(jnp.where(weights > 0, values * weights, 0.0))


def reduce_directions(
  losses: DirectionalLoss,
  reduction: Reduction = "mean",
  weights: tuple[Any, Any] = (1.0, 1.0),
) -> jax.Array | DirectionalLoss:
  """``a·reduce(image->text) + b·reduce(text->image)`` with ``(a, b) = weights``, reduce the
  masked mean or sum (module documentation); ``"none"`` returns ``losses`` as they are."""
  checks.check_choice("reduction", reduction, REDUCTIONS)
  if reduction == "none":
    return losses
  reduce = masked_mean if reduction == "mean" else masked_sum
  return weights[0] * reduce(losses.image_to_text, losses.image_weight) + weights[1] * reduce(
    losses.text_to_image, losses.text_weight
  )


def both_ways(
  core: Core,
  sim: jax.Array,
  *,
  positives: jax.Array | None = None,
  where: jax.Array | None = None,
  graded: jax.Array | None = None,
  reduction: Reduction = "mean",
  **hyper,
) -> jax.Array | DirectionalLoss:
  """A per-query ``core`` on a whole matrix: image->text on ``sim``, text->image on ``sim.T``.

  ``L = reduce_i l_i + reduce_j l_j`` over the image queries i (rows of ``sim``) and the
  caption queries j (rows of ``sim.T``, with the masks and ``graded`` transposed), each
  ``(l, w) = core(rows, **hyper)``, reduced by ``reduction`` (module documentation;
  :func:`!reduce_directions` weighs the directions). Resolves the masks
  (:func:`!resolve_masks`) and checks that ``graded`` has ``sim``'s shape.

  A core of one's own becomes a loss of the whole matrix, both directions reduced:

  >>> import jax.numpy as jnp
  >>> def hardest_negative(rows, *, key=None):  # per query: its highest negative score
  ...   negatives = rows.where & ~rows.positives
  ...   scores = jnp.where(negatives, rows.sim, -jnp.inf)
  ...   return jnp.max(scores, axis=-1), jnp.any(negatives, axis=-1)
  >>> sim = jnp.array([[0.9, 0.3], [0.2, 0.8]])
  >>> round(float(both_ways(hardest_negative, sim)), 6)  # mean(.3, .2) + mean(.2, .3)
  0.5
  >>> round(float(both_ways(hardest_negative, sim, reduction="sum")), 6)
  1.0

  (:class:`!QueryLoss` derives this, the core and the registry entry from one query's
  formula.)
  """
  checks.check_choice("reduction", reduction, REDUCTIONS)
  positives, where = resolve_masks(sim, positives, where)
  if graded is not None and graded.shape != sim.shape:
    raise ValueError(f"graded: expected shape {sim.shape} like sim, got {graded.shape}")
  (i2t, w_i2t), (t2i, w_t2i) = (
    core(rows, **hyper) for rows in directions(sim, positives, where, graded)
  )
  losses = DirectionalLoss(i2t, t2i, w_i2t.astype(sim.dtype), w_t2i.astype(sim.dtype))
  return reduce_directions(losses, reduction)


class Query(NamedTuple):
  """One query row of one direction: what a loss's per-query formula sees.

  Attributes:
    sim: ``[C]`` scores of the query against every candidate (0 where padded).
    positives: bool ``[C]`` annotated pairs.
    where: bool ``[C]`` valid pairs.
    graded: ``[C]`` the graded row (relevance, metric, semantic; 0 where padded) or None.
    key: the query's own ``jax.random`` key (:func:`row_keys`), or None.
  """

  sim: jax.Array
  positives: jax.Array
  where: jax.Array
  graded: jax.Array | None
  key: jax.Array | None


def keyword_defaults(fn: Callable[..., Any]) -> dict[str, Any]:
  """``{name: default}`` of ``fn``'s keyword-only parameters, in order (its hyper-parameters)."""
  return {
    p.name: p.default
    for p in inspect.signature(fn).parameters.values()
    if p.kind is inspect.Parameter.KEYWORD_ONLY
  }


def _parameter(name: str, default: Any = inspect.Parameter.empty, annotation: Any = None):
  kind = (
    inspect.Parameter.POSITIONAL_OR_KEYWORD
    if default is inspect.Parameter.empty
    else inspect.Parameter.KEYWORD_ONLY
  )
  annotation = inspect.Parameter.empty if annotation is None else annotation
  return inspect.Parameter(name, kind, default=default, annotation=annotation)


def _derived(
  name: str, module: str, signature: inspect.Signature, body: Callable[[dict[str, Any]], Any]
) -> Callable[..., Any]:
  """A function named ``name`` of ``signature`` that runs ``body(arguments)`` (every
  argument bound by name, defaults filled in)."""

  def fn(*args, **kwargs):
    try:
      bound = signature.bind(*args, **kwargs)
    except TypeError as err:
      raise TypeError(f"{name}() {err}") from None
    bound.apply_defaults()
    return body(dict(bound.arguments))

  fn.__name__ = fn.__qualname__ = name
  fn.__module__ = module
  fn.__signature__ = signature
  return fn


@dataclasses.dataclass(eq=False)
class QueryLoss:
  """A loss written once, as the formula of one query; every other form derived from it.

  ``formula(query: Query, *, **hyper) -> (loss, counts)`` is one query's loss (a scalar)
  and whether the query counts (a bool), with the hyper-parameters keyword-only and their
  defaults in its signature (read by :func:`keyword_defaults`, written nowhere else).
  From it:

  * :attr:`per_query`, the core ``(rows: QueryRows, *, key=None, **hyper) -> (loss [Q],
    weight [Q])``: the hyper-parameters checked against :attr:`ranges`, padding set to 0
    (:func:`without_padding`), the formula mapped over the rows (``jax.vmap``; with
    ``block``, ``lax.map`` that many rows at a time), a non-finite valid entry made NaN
    (:func:`!jitr.losses.checks.propagate_nonfinite`), the loss weighted by its direction
    (:attr:`direction_weights`); the objective and the train step call it on any block
    of rows;
  * :attr:`fn`, the function of the whole matrix ``fn(sim, [graded,] *, positives=None,
    where=None, [key=None,] **hyper, reduction="mean")`` (:meth:`function`): the core on
    the rows of ``sim`` and of ``sim.T`` (:func:`both_ways`), reduced as
    ``a·reduce_i l_i + b·reduce_j l_j``, ``(a, b) = direction_weights(hyper)`` (1 and 1
    by default);
  * :meth:`check_config`, a config term's fields checked against :attr:`ranges`.

  Attributes:
    formula: one query's loss (above); its ``__name__`` is ``NAME_query``.
    ranges: ``{hyper-parameter: checks.Range}``, one per keyword-only parameter of
      ``formula``.
    graded: the name of its graded matrix (``"relevance"``, ``"metric"``,
      ``"semantic"``), the second positional argument of :attr:`fn`; None for none. An
      objective term reads ``graded[term["input"]]``.
    needs_key: whether it draws random numbers (each query gets its own key).
    direction_weights: ``hyper -> (a, b)``, the weights of image->text and text->image;
      None for (1, 1).
    block: the hyper-parameter that says how many rows are mapped at once (memory), or
      None (all rows vmapped).
    identity_positives: whether ``positives=None`` means the identity (one caption per
      image, on the diagonal) or no annotated pairs at all.
  """

  formula: Callable[..., tuple[jax.Array, jax.Array]]
  ranges: Mapping[str, checks.Range]
  graded: str | None = None
  needs_key: bool = False
  direction_weights: Callable[[Mapping[str, Any]], tuple[Any, Any]] | None = None
  block: str | None = None
  identity_positives: bool = True
  fn: Callable[..., Any] = dataclasses.field(init=False, repr=False)
  per_query: Core = dataclasses.field(init=False, repr=False)

  def __post_init__(self):
    if set(self.ranges) != set(self.defaults):
      raise TypeError(
        f"{self.name}: ranges name {sorted(self.ranges)}, the formula's keyword-only "
        f"parameters are {sorted(self.defaults)}"
      )
    self.per_query = self._core()
    self.fn = None

  @property
  def name(self) -> str:
    """The loss's name: its formula's name without ``_query``."""
    return self.formula.__name__.removesuffix("_query")

  @property
  def defaults(self) -> dict[str, Any]:
    """``{hyper-parameter: default}`` from the formula's signature."""
    return keyword_defaults(self.formula)

  def hyper(self, given: Mapping[str, Any]) -> dict[str, Any]:
    """The defaults updated by ``given``, each checked against its range (a traced value
    passes); ``TypeError`` for a name that is not a hyper-parameter."""
    hyper = self.defaults
    unknown = sorted(set(given) - set(hyper))
    if unknown:
      raise TypeError(
        f"{self.name}: no hyper-parameter {unknown[0]!r}; expected one of {sorted(hyper)}"
      )
    hyper.update(given)
    for name, value in hyper.items():
      self.ranges[name].check(name, value)
    return hyper

  def check_config(self, field: str, term: Mapping[str, Any]) -> None:
    """Each hyper-parameter ``term`` sets, checked: ``config.FIELD.NAME: expected ...``."""
    for name, declared in self.ranges.items():
      if name in term:
        declared.check_config(f"{field}.{name}", term[name])

  def weights(self, hyper: Mapping[str, Any]) -> tuple[Any, Any]:
    """``(a, b)``: the weights of image->text and text->image."""
    return (1.0, 1.0) if self.direction_weights is None else self.direction_weights(hyper)

  def rows(
    self, rows: QueryRows, key: jax.Array | None, hyper: Mapping[str, Any]
  ) -> tuple[jax.Array, jax.Array]:
    """``(loss [Q], weight [Q])`` of a block of rows of one direction, not weighted by
    direction; ``hyper`` already checked (:meth:`hyper`)."""
    if self.graded is not None and rows.graded is None:
      raise ValueError(f"{self.name}: needs a {self.graded} matrix (rows.graded is None)")
    rows = without_padding(rows)
    keys = row_keys(key, rows) if self.needs_key and key is not None else None
    queries = Query(rows.sim, rows.positives, rows.where, rows.graded, keys)
    one = functools.partial(self.formula, **hyper)
    if self.block is None:
      loss, counts = jax.vmap(one)(queries)
    else:
      size = min(hyper[self.block], rows.sim.shape[0])
      loss, counts = jax.lax.map(one, queries, batch_size=size)
    return checks.propagate_nonfinite(loss, rows.where, rows.sim, rows.graded), counts

  def _core(self) -> Core:
    params = [_parameter("rows", annotation=QueryRows), _parameter("key", None)]
    params += [_parameter(n, d) for n, d in self.defaults.items()]

    def core(arguments):
      rows, key = arguments.pop("rows"), arguments.pop("key")
      hyper = self.hyper(arguments)
      loss, weight = self.rows(rows, key, hyper)
      if self.direction_weights is not None:
        loss = self.direction_weights(hyper)[rows.direction] * loss
      return loss, weight

    return _derived(
      f"{self.name}_queries", self.formula.__module__, inspect.Signature(params), core
    )

  def matrix(
    self,
    sim: jax.Array,
    graded: jax.Array | None,
    options: Mapping[str, Any],
  ) -> jax.Array | DirectionalLoss:
    """:attr:`fn` on its arguments: ``options`` has ``positives``, ``where``,
    ``reduction``, ``key`` (when it draws) and the hyper-parameters."""
    options = dict(options)
    positives, where = options.pop("positives"), options.pop("where")
    reduction, key = options.pop("reduction"), options.pop("key", None)
    checks.check_choice("reduction", reduction, REDUCTIONS)
    chex.assert_rank(sim, 2)
    if graded is not None and graded.shape != sim.shape:
      raise ValueError(f"{self.graded}: expected shape {sim.shape} like sim, got {graded.shape}")
    if positives is None and not self.identity_positives:
      positives = jnp.zeros(sim.shape, bool)
    hyper = self.hyper(options)
    losses = both_ways(
      lambda rows: self.rows(rows, key, hyper),
      sim,
      positives=positives,
      where=where,
      graded=graded,
      reduction="none",
    )
    return reduce_directions(losses, reduction, self.weights(hyper))

  def function(self, doc: str) -> Callable[..., Any]:
    """The loss of the whole matrix (:attr:`fn`, named :attr:`name`, documented by
    ``doc``): ``fn(sim, [graded,] *, positives=None, where=None, [key=None,] **hyper,
    reduction="mean")``."""
    array = jax.Array
    params = [_parameter("sim", annotation=array)]
    if self.graded is not None:
      params.append(_parameter(self.graded, annotation=array))
    params += [
      _parameter("positives", None, array | None),
      _parameter("where", None, array | None),
    ]
    if self.needs_key:
      params.append(_parameter("key", None, array | None))
    formula = inspect.signature(self.formula, eval_str=True).parameters
    params += [_parameter(n, d, formula[n].annotation) for n, d in self.defaults.items()]
    params.append(_parameter("reduction", "mean", Reduction))
    signature = inspect.Signature(params, return_annotation=array | DirectionalLoss)

    def body(arguments):
      sim = arguments.pop("sim")
      graded = None if self.graded is None else arguments.pop(self.graded)
      return self.matrix(sim, graded, arguments)

    self.fn = _derived(self.name, self.formula.__module__, signature, body)
    self.fn.__doc__ = doc
    return self.fn
