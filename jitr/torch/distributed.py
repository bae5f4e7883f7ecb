"""Global ranking under ``torch.distributed``: every process sees the whole batch.

A listwise loss ranks each query against the candidates of the **global** batch.
:func:`all_gather` concatenates a tensor over the processes, differentiably: the
backward pass sums each process's gradient into the slice its owner holds. When
process p computes a share ``L_p`` of the global loss (``Σ_p L_p = L``) from
gathered embeddings and backpropagates ``W·L_p``, each process's embeddings
receive ``W·∂L/∂e``, and DistributedDataParallel's mean over the ``W`` processes
leaves exactly ``∂L/∂θ``: W processes train as one process on the concatenated
batch.

:class:`jitr.torch.TripletSNDCGLoss` (``ranking="global"``) computes as its share
the terms of the process's own queries (its images and captions) against every
gathered candidate: O(N³/W) per process for Smooth-NDCG on a global batch of N
instead of O(N³). Processes must hold batches of equal size (``DistributedSampler``
pads).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

__all__ = ["all_gather", "all_sum", "rank", "world_size"]


def world_size() -> int:
  """The number of processes, 1 without an initialised process group."""
  return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
  """This process's rank, 0 without an initialised process group."""
  return dist.get_rank() if world_size() > 1 else 0


def all_sum(x: torch.Tensor) -> torch.Tensor:
  """``Σ_p x_p`` over the processes, detached (``x`` itself for one process)."""
  if world_size() == 1:
    return x.detach()
  out = x.detach().clone()
  dist.all_reduce(out)
  return out


def all_gather(x: torch.Tensor) -> torch.Tensor:
  """``cat([x_0, …, x_{W−1}], dim=0)`` over the processes (``x`` itself for one process).

  Differentiable when ``x`` requires grad: ``∂/∂x_r = Σ_p ∂L_p/∂x_r`` over the processes p.
  """
  if world_size() == 1:
    return x
  if x.requires_grad:
    return _AllGather.apply(x)
  return _gathered(x)


def _gathered(x: torch.Tensor) -> torch.Tensor:
  """``cat([x_0, …, x_{W−1}], dim=0)``, not differentiated (equal shapes on every process)."""
  parts = [torch.empty_like(x) for _ in range(world_size())]
  dist.all_gather(parts, x.contiguous())
  return torch.cat(parts, dim=0)


class _AllGather(torch.autograd.Function):
  """:func:`all_gather` as an autograd op: the backward pass sums the incoming gradient
  over the processes (``all_reduce``) and returns this process's rows of it."""

  @staticmethod
  def forward(ctx, x: torch.Tensor) -> torch.Tensor:
    ctx.rows = slice(rank() * x.shape[0], (rank() + 1) * x.shape[0])
    return _gathered(x)

  @staticmethod
  def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
    total = grad.contiguous().clone()
    dist.all_reduce(total)  # Σ_p ∂L_p/∂(gathered rows)
    return total[ctx.rows]
