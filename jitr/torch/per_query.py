"""Per-query values of a jitr loss as one differentiable PyTorch operation.

``per_query(fn, sim, ..., reduction="none")`` returns what the JAX function returns
(e.g. a :class:`~jitr.losses.DirectionalLoss` of ``image_to_text [N_img]`` and
``text_to_image [N_txt]`` per-query losses with their query weights) as torch tensors.
Unlike :func:`jitr.torch.loss`, whose gradient is computed with the value, the backward
pass here is a vector-Jacobian product of the incoming gradients, ``Σ_q g_q · ∂l_q/∂x``,
run by a second jitted JAX program.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import torch

from jitr.torch.bridge import resolve, to_jax, to_torch
from jitr.torch.calls import Call, check_devices, function_name, nonfinite_inputs, split_call

__all__ = ["per_query"]

# One jitted forward and one jitted vector-Jacobian product per call structure.
_FORWARD: dict[tuple, Callable] = {}
_VJP: dict[tuple, Callable] = {}


def _forward(call: Call) -> Callable:
  """``(diff, rest) -> fn(...)``, jitted once per :attr:`~jitr.torch.calls.Call.key`."""
  if call.key not in _FORWARD:
    _FORWARD[call.key] = jax.jit(call.apply)
  return _FORWARD[call.key]


def _vjp(call: Call) -> Callable:
  """``(diff, rest, cotangents) -> ∂⟨cotangents, fn⟩/∂diff``."""
  if call.key not in _VJP:

    def vjp(diff, rest, cotangents):
      _, pullback = jax.vjp(lambda d: call.apply(d, rest), diff)
      return pullback(cotangents)[0]

    _VJP[call.key] = jax.jit(vjp)
  return _VJP[call.key]


def _split(call: Call, arrays: Sequence[Any]) -> tuple[tuple, tuple]:
  """``(diff, rest)``: the differentiated array leaves and the others, as JAX arrays."""
  jax_arrays = [to_jax(a) if isinstance(a, torch.Tensor) else a for a in arrays]
  diff = tuple(a for a, w in zip(jax_arrays, call.wrt) if w)
  rest = tuple(a for a, w in zip(jax_arrays, call.wrt) if not w)
  return diff, rest


class _JaxValues(torch.autograd.Function):
  """``forward(call, structure, *arrays) -> output leaves``; ``structure["out"]`` receives
  the output tree. The backward pass runs the jitted vector-Jacobian product."""

  @staticmethod
  def forward(ctx, call: Call, structure: dict, *arrays):
    diff, rest = _split(call, arrays)
    leaves, treedef = jax.tree_util.tree_flatten(_forward(call)(diff, rest))
    if not all(bool(jnp.all(jnp.isfinite(leaf))) for leaf in leaves):
      jax_arrays = [to_jax(a) if isinstance(a, torch.Tensor) else a for a in arrays]
      bad = nonfinite_inputs(call, jax_arrays)
      culprit = f"non-finite values in {', '.join(bad)}" if bad else "finite inputs"
      raise ValueError(
        f"per_query: {function_name(call.fn)} has non-finite values from {culprit}; jitr's losses "
        "are NaN exactly when a valid entry is NaN or ±inf (padded entries never count)"
      )
    structure["out"] = treedef
    ctx.call, ctx.diff, ctx.rest, ctx.treedef = call, diff, rest, treedef
    ctx.dtypes = [leaf.dtype for leaf in leaves]
    return tuple(to_torch(leaf) for leaf in leaves)

  @staticmethod
  def backward(ctx, *grad_leaves):
    cotangents = jax.tree_util.tree_unflatten(
      ctx.treedef,
      [to_jax(g.contiguous()).astype(d) for g, d in zip(grad_leaves, ctx.dtypes, strict=True)],
    )
    grads = iter(_vjp(ctx.call)(ctx.diff, ctx.rest, cotangents))
    return (None, None, *[to_torch(next(grads)) if w else None for w in ctx.call.wrt])


def per_query(name_or_fn: str | Callable[..., Any], sim: torch.Tensor, *args: Any, **kwargs):
  """What ``fn(sim, *args, **kwargs)`` returns, as differentiable torch tensors.

  For per-query losses pass ``reduction="none"``: a ``DirectionalLoss`` of
  ``image_to_text [N_img]`` and ``text_to_image [N_txt]`` values and their query weights
  (0 for a padded or positive-less query). Arguments
  are those of :func:`jitr.torch.loss`; the gradient of any function of the outputs
  reaches every floating tensor that requires grad.

  Raises:
    ValueError: for tensors on different devices, or non-finite values (naming the
      inputs with a non-finite valid entry).
  """
  fn = resolve(name_or_fn)
  call, arrays = split_call(fn, (sim, *args), kwargs)
  check_devices(call, arrays)
  structure: dict[str, Any] = {}
  leaves = _JaxValues.apply(call, structure, *arrays)
  return jax.tree_util.tree_unflatten(structure["out"], list(leaves))
