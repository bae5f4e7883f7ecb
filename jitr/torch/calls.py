"""A call ``fn(sim, *args, **kwargs)`` split into its array leaves and its static rest.

:func:`split_call` flattens the arguments (tensors may sit inside dicts and tuples) into
the array leaves (torch tensors, JAX and NumPy arrays) and a :class:`Call` that holds
everything else: the argument structure, a readable name per leaf (``sim``,
``relevance``, ``graded['relevance']``), the static values, and which array leaves are
differentiated. :meth:`Call.apply` rebuilds the arguments from JAX arrays and runs
``fn``; :func:`check_devices` and :func:`nonfinite_inputs` name the inputs behind a
device mismatch or a non-finite value.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import torch

__all__ = [
  "Call",
  "array_names",
  "check_devices",
  "function_name",
  "nonfinite_inputs",
  "split_call",
]


class _Array:
  """The placeholder of an array leaf among a call's static values."""

  def __repr__(self) -> str:
    return "<array>"


_ARRAY = _Array()


@dataclasses.dataclass(frozen=True)
class Call:
  """One call's argument structure: which leaves are tensors, which are static values."""

  fn: Callable[..., Any]
  treedef: Any
  names: tuple[str, ...]  # a readable name per leaf, for error messages
  statics: tuple[Any, ...]  # per leaf: the static value, or _ARRAY for array leaves
  wrt: tuple[bool, ...]  # per array leaf: differentiated or not

  @property
  def key(self) -> tuple:
    """``(fn, treedef, statics, wrt)``: calls with equal keys run the same JAX program."""
    return (self.fn, self.treedef, self.statics, self.wrt)

  def apply(self, diff: tuple[jax.Array, ...], rest: tuple[jax.Array, ...]) -> Any:
    """``fn`` on the rebuilt arguments (the differentiated and the other array leaves)."""
    diff_it, rest_it = iter(diff), iter(rest)
    arrays = iter([next(diff_it) if w else next(rest_it) for w in self.wrt])
    leaves = [next(arrays) if s is _ARRAY else s for s in self.statics]
    args, kwargs = jax.tree_util.tree_unflatten(self.treedef, leaves)
    return self.fn(*args, **kwargs)


def function_name(fn: Callable[..., Any]) -> str:
  """``fn.__name__``, or the name of ``fn``'s type for a callable object without one."""
  return getattr(fn, "__name__", type(fn).__name__)


def _positional_names(fn: Callable[..., Any]) -> list[str]:
  """The names of ``fn``'s positional parameters (``sim``, ``relevance``, …)."""
  try:
    params = inspect.signature(fn).parameters.values()
  except (TypeError, ValueError):
    return []
  kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
  return [p.name for p in params if p.kind in kinds]


def _leaf_name(path: tuple, positional: Sequence[str]) -> str:
  """``sim``, ``relevance``, ``graded['relevance']`` from a pytree path of ``(args, kwargs)``."""
  head, *tail = path
  if head.idx == 0:  # positional arguments
    index = tail[0].idx
    name = positional[index] if index < len(positional) else f"argument {index}"
    name = "sim" if index == 0 else name
    rest = tail[1:]
  else:  # keyword arguments
    name, rest = str(tail[0].key), tail[1:]
  return name + jax.tree_util.keystr(tuple(rest))


def _is_array(leaf: Any) -> bool:
  """Whether ``leaf`` is an array argument (a torch tensor, a JAX or a NumPy array)."""
  return isinstance(leaf, torch.Tensor | jax.Array | np.ndarray)


def split_call(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict) -> tuple[Call, list[Any]]:
  """The call's static structure and its array leaves (tensors and JAX arrays).

  An array leaf is differentiated when it is a floating torch tensor that requires
  grad and PyTorch's grad mode is on.
  """
  with_path, treedef = jax.tree_util.tree_flatten_with_path(
    (tuple(args), dict(kwargs)), is_leaf=lambda x: isinstance(x, torch.Tensor)
  )
  positional = _positional_names(fn)
  names = tuple(_leaf_name(path, positional) for path, _ in with_path)
  leaves = [leaf for _, leaf in with_path]
  arrays = [leaf for leaf in leaves if _is_array(leaf)]
  statics = tuple(_ARRAY if _is_array(leaf) else leaf for leaf in leaves)
  grad_on = torch.is_grad_enabled()
  wrt = tuple(
    isinstance(a, torch.Tensor) and grad_on and a.requires_grad and a.is_floating_point()
    for a in arrays
  )
  return Call(fn, treedef, names, statics, wrt), arrays


def array_names(call: Call) -> list[str]:
  """The names of ``call``'s array leaves, in the order :func:`split_call` returns them."""
  return [n for n, s in zip(call.names, call.statics) if s is _ARRAY]


def check_devices(call: Call, arrays: Sequence[Any]) -> None:
  """All tensors on one device, else one error listing them."""
  devices = {
    name: str(a.device) for name, a in zip(array_names(call), arrays) if isinstance(a, torch.Tensor)
  }
  if len(set(devices.values())) > 1:
    listed = ", ".join(f"{name} on {device}" for name, device in devices.items())
    raise ValueError(f"loss: tensors must all be on one device, got {listed}")


def nonfinite_inputs(call: Call, arrays: Sequence[jax.Array]) -> list[str]:
  """Names of the float inputs with a non-finite entry where ``where`` is True."""
  names = array_names(call)
  by_name = dict(zip(names, arrays))
  sim_shape = arrays[names.index("sim")].shape if "sim" in by_name else None
  where = by_name.get("where")
  bad = []
  for name, a in by_name.items():
    if not jnp.issubdtype(a.dtype, jnp.floating):
      continue
    finite = jnp.isfinite(a)
    if where is not None and a.shape == sim_shape:
      finite = finite | ~jnp.broadcast_to(where.astype(bool), sim_shape)
    if not bool(jnp.all(finite)):
      bad.append(name)
  return bad
