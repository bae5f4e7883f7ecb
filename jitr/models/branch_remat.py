"""``lax.switch`` whose backward pass recomputes only the branch that ran.

Differentiating ``lax.switch`` (or ``jax.checkpoint`` around it) keeps the *union* of
every branch's residuals, each branch filling the others' with zeros: with branches
that are the same computation cut to different lengths, the memory of all of them
together. :func:`switch_rematerialised` keeps only the operands and, in the backward
pass, runs ``jax.vjp`` of the chosen branch alone (its forward again, then its
backward): the memory of one branch, the time of one extra forward.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax


def switch_rematerialised(index: jax.Array, branches: Sequence[Callable], *operands: Any) -> Any:
  """``lax.switch(index, branches, *operands)`` (``index`` clamped to the branches),
  differentiable in ``operands`` with the chosen branch recomputed in the backward pass.

  Every branch must map the operands to outputs of the same structure, shapes and
  dtypes (as ``lax.switch`` requires).
  """
  branches = tuple(branches)

  def backward_of(branch: Callable) -> Callable:
    def vjp(operands, cotangent):
      _, pullback = jax.vjp(branch, *operands)
      return pullback(cotangent)

    return vjp

  @jax.custom_vjp
  def run(index, operands):
    return jax.lax.switch(index, branches, *operands)

  def forward(index, operands):
    return run(index, operands), (index, operands)

  def backward(saved, cotangent):
    index, operands = saved
    grads = jax.lax.switch(index, [backward_of(b) for b in branches], operands, cotangent)
    return None, grads

  run.defvjp(forward, backward)
  return run(index, operands)
