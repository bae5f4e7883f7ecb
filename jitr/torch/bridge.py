"""A jitr loss as one differentiable PyTorch operation.

``loss(fn, sim, ...)`` runs ``jax.jit(jax.value_and_grad(fn))`` once in the
forward pass and keeps the gradient; the backward pass returns
``∂L/∂x · grad_output`` for every input tensor ``x`` that requires grad. Tensors
cross between the frameworks by DLPack, without a copy when the buffer allows it
(on CPU: a contiguous tensor whose data pointer XLA accepts as aligned).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import torch

from jitr.losses import LOSSES
from jitr.torch.calls import (
  Call,
  array_names,
  check_devices,
  function_name,
  nonfinite_inputs,
  split_call,
)

__all__ = ["cache_size", "loss", "resolve", "to_jax", "to_torch"]

# One jitted value-and-grad program per (fn, argument structure, static values, wrt):
# JAX's own cache then holds one executable per input shape and dtype.
_PROGRAMS: dict[tuple, Callable] = {}


def to_jax(tensor: torch.Tensor) -> jax.Array:
  """A JAX view of ``tensor`` by DLPack (detached, made contiguous first).

  ``float64`` needs JAX's x64 mode (``jax.enable_x64(True)``): JAX would
  otherwise silently cast it to ``float32``.
  """
  if tensor.dtype == torch.float64 and not jax.config.jax_enable_x64:
    raise ValueError(
      "float64 tensor: JAX's x64 mode is off, so JAX would cast it to float32; "
      "enable it (jax.config.update('jax_enable_x64', True) or `with jax.enable_x64(True):`) "
      "or pass float32"
    )
  return jax.dlpack.from_dlpack(tensor.detach().contiguous())


def to_torch(array: jax.Array) -> torch.Tensor:
  """A PyTorch view of a JAX array by DLPack (the same buffer)."""
  return torch.from_dlpack(array)


def resolve(name_or_fn: str | Callable[..., Any]) -> Callable[..., Any]:
  """``LOSSES[name].fn`` for a registered name, else the callable itself
  (an :class:`jitr.losses.composite.Objective`, or any function of JAX arrays)."""
  if isinstance(name_or_fn, str):
    if name_or_fn not in LOSSES:
      raise ValueError(f"loss: unknown name {name_or_fn!r}; expected one of {sorted(LOSSES)}")
    return LOSSES[name_or_fn].fn
  if not callable(name_or_fn):
    raise TypeError(f"loss: expected a name of LOSSES or a callable, got {name_or_fn!r}")
  return name_or_fn


def cache_size() -> int:
  """How many executables the bridge has compiled (over every loss and input shape)."""
  return sum(program._cache_size() for program in _PROGRAMS.values())


def _scalar_and_aux(call: Call, diff: tuple[jax.Array, ...], rest: tuple[jax.Array, ...]):
  """``call``'s function on the rebuilt arguments as ``(loss, aux)``; ``aux`` is what
  follows the loss (None when the function returns the scalar alone)."""
  out = call.apply(diff, rest)
  value, aux = (out[0], tuple(out[1:])) if isinstance(out, tuple | list) else (out, None)
  if not hasattr(value, "ndim") or value.ndim != 0:
    raise ValueError(
      f"loss: {function_name(call.fn)} must return a scalar (or a tuple starting with one); "
      "for per-query values (reduction='none') use jitr.torch.per_query"
    )
  return value, aux


def _program(call: Call) -> Callable:
  """The jitted ``value_and_grad`` of :func:`_scalar_and_aux` for ``call``'s structure
  (one per :attr:`~jitr.torch.calls.Call.key`, kept in ``_PROGRAMS``)."""
  if call.key not in _PROGRAMS:
    scalar = functools.partial(_scalar_and_aux, call)
    _PROGRAMS[call.key] = jax.jit(jax.value_and_grad(scalar, has_aux=True))
  return _PROGRAMS[call.key]


def _run(call: Call, arrays: Sequence[Any]):
  """``(loss, grads per array leaf (None if not differentiated), aux)`` as JAX arrays."""
  jax_arrays = [to_jax(a) if isinstance(a, torch.Tensor) else a for a in arrays]
  diff = tuple(a for a, w in zip(jax_arrays, call.wrt) if w)
  rest = tuple(a for a, w in zip(jax_arrays, call.wrt) if not w)
  (value, aux), grads = _program(call)(diff, rest)
  # Reading the value waits for the program, so PyTorch cannot overwrite an input
  # buffer (e.g. an optimizer step) while JAX still reads it.
  if not bool(jnp.isfinite(value)):
    bad = nonfinite_inputs(call, jax_arrays)
    where = "valid entries (where=True) of " if "where" in array_names(call) else ""
    culprit = f"non-finite values in {where}{', '.join(bad)}" if bad else "finite inputs"
    raise ValueError(
      f"loss: {function_name(call.fn)} is {float(value)} from {culprit}; jitr's losses are NaN "
      "exactly when a valid entry is NaN or ±inf (padded entries, where=False, never count)"
    )
  grads_it = iter(grads)
  return value, [next(grads_it) if w else None for w in call.wrt], aux


class _JaxLoss(torch.autograd.Function):
  """``forward(call, structure, *arrays) -> (loss, *aux leaves)``; the gradient is
  computed in the forward. ``structure["aux"]`` receives the aux tree (None: no aux)."""

  @staticmethod
  def forward(ctx, call: Call, structure: dict, *arrays):
    value, grads, aux = _run(call, arrays)
    structure["aux"] = jax.tree_util.tree_structure(aux) if aux is not None else None
    ctx.grads = [None if g is None else to_torch(g) for g in grads]
    aux_tensors = [to_torch(a) for a in jax.tree_util.tree_leaves(aux)]
    ctx.mark_non_differentiable(*aux_tensors)
    return (to_torch(value), *aux_tensors)

  @staticmethod
  def backward(ctx, grad_value, *grad_aux):
    del grad_aux
    grads = [None if g is None else g * grad_value.to(g.dtype) for g in ctx.grads]
    return (None, None, *grads)


def loss(name_or_fn: str | Callable[..., Any], sim: torch.Tensor, *args: Any, **kwargs: Any):
  """A jitr loss of PyTorch tensors: ``L = fn(sim, *args, **kwargs)``, differentiable.

  ``fn`` is a name of :data:`jitr.losses.LOSSES` (``"triplet"``, ``"smooth_ndcg"``,
  …), an :class:`~jitr.losses.composite.Objective`, or any JAX function returning a
  scalar or a tuple ``(scalar, aux…)``. Arguments are the JAX function's own
  (``positives``, ``where``, ``relevance``, ``graded={...}``, hyper-parameters);
  tensors may sit inside dicts and tuples. Non-tensor values are static (a
  change recompiles). The gradient ``∂L/∂x`` is computed in the forward pass
  for every floating tensor ``x`` that requires grad (usually only ``sim``;
  relevance and masks are data) and returned as ``∂L/∂x · grad_output``.

  Returns:
    The loss as a 0-d tensor; with aux outputs, ``(loss, aux)`` where ``aux``
    keeps the function's structure (e.g. an objective's ``{term: value}``) and
    carries no gradient.

  Raises:
    ValueError: for tensors on different devices, ``float64`` without JAX's x64
      mode, a non-scalar loss, or a non-finite loss (naming the inputs with a
      non-finite valid entry).
  """
  fn = resolve(name_or_fn)
  call, arrays = split_call(fn, (sim, *args), kwargs)
  check_devices(call, arrays)
  structure: dict[str, Any] = {}
  value, *aux_leaves = _JaxLoss.apply(call, structure, *arrays)
  if structure["aux"] is None:
    return value
  aux = jax.tree_util.tree_unflatten(structure["aux"], aux_leaves)
  return value, (aux[0] if len(aux) == 1 else aux)
