"""A drop-in for Listwise ITR's ``TripletSNDCGLoss`` (AAA-Zheng/Listwise_ITR ``model.py``).

Same construction (an ``opt`` with ``margin``, ``tau``, ``sndcg_weight``,
``batch_size``), same ``forward(v, t, v_text_emb, t_text_emb)`` and the same
7-tuple; the loss runs as jitr's jitted JAX function
(:func:`jitr.losses.triplet_sndcg.triplet_sndcg`) through the DLPack bridge.
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from jitr.losses.triplet_sndcg import (
  ORIENTATIONS,
  Orientation,
  triplet_sndcg,
  triplet_sndcg_rows,
)
from jitr.torch import bridge, buckets, distributed

__all__ = ["TripletSNDCGLoss"]

RANKINGS = ("local", "global")
_NAMES = ("pairwise", "listwise", "ndcg_t", "real_ndcg_t", "ndcg_v", "real_ndcg_v")
_SUMS = (*_NAMES, "count_t", "count_v", "real_count_t", "real_count_v")


def _pad_rows(x: torch.Tensor, n: int) -> torch.Tensor:
  """``x`` with zero rows appended up to ``n`` rows."""
  if x.shape[0] == n:
    return x
  return torch.cat([x, x.new_zeros((n - x.shape[0], *x.shape[1:]))])


class TripletSNDCGLoss(torch.nn.Module):
  """``(1 − w)·L_triplet + w·L_SNDCG`` with ``scores = v @ t.T``.

  ``forward(v [N, D], t [N, D], v_text_emb [N, K, E], t_text_emb [N, E])``
  returns ``(loss, pairwise, listwise, ndcg_t, real_ndcg_t, ndcg_v,
  real_ndcg_v)``. Only ``loss`` carries a gradient (to ``v`` and ``t``); the six
  logged values are detached. A batch smaller than ``opt.batch_size`` (the
  ragged last one) is padded to it with ``where`` masks, so one program serves
  every batch; larger batches run at their own size.

  Under ``torch.distributed``, ``ranking="local"`` ranks each process's own batch
  (the official code's behaviour per GPU); ``"global"`` gathers the embeddings of
  every process (:mod:`!jitr.torch.distributed`) and each process computes the terms
  of its own image and caption queries against the whole gathered batch, so with
  DistributedDataParallel W processes of N pairs train exactly as one process of
  W·N pairs at 1/W of its loss computation each. ``loss`` is then the global loss
  (its gradient is W times the process's share, which DDP's mean turns into the
  global gradient) and the logged values are the global ones; padding applies to
  the gathered batch (up to ``W·opt.batch_size`` candidates).

  Args:
    opt: any object with ``margin``, ``tau``, ``sndcg_weight``, ``batch_size``.
    orientation: text->image relevance, ``"corrected"`` (``r_ij`` for caption j
      ranking image i) or ``"official"`` (the reference code's ``r_ji``).
    ranking: ``"local"`` or ``"global"`` (across processes).
  """

  def __init__(
    self,
    opt: Any,
    *,
    orientation: Orientation = "corrected",
    ranking: Literal["local", "global"] = "local",
  ):
    super().__init__()
    if orientation not in ORIENTATIONS:
      raise ValueError(f"orientation: expected one of {ORIENTATIONS}, got {orientation!r}")
    if ranking not in RANKINGS:
      raise ValueError(f"ranking: expected one of {RANKINGS}, got {ranking!r}")
    self.ranking = ranking
    self.margin = float(opt.margin)
    self.tau = float(opt.tau)
    self.sndcg_weight = float(opt.sndcg_weight)
    self.batch_size = int(opt.batch_size)
    self.orientation = orientation

  def forward(self, v, t, v_text_emb, t_text_emb):
    if self.ranking == "global" and distributed.world_size() > 1:
      return self._global_rows(v, t, v_text_emb, t_text_emb)
    n = v.shape[0]
    size = max(n, self.batch_size)
    scores = buckets.pad_matrix(v @ t.T, size, size)
    valid = torch.arange(size, device=v.device) < n
    loss, metrics = bridge.loss(
      triplet_sndcg,
      scores,
      _pad_rows(v_text_emb.to(v.device, scores.dtype), size),
      _pad_rows(t_text_emb.to(v.device, scores.dtype), size),
      where=valid[:, None] & valid[None, :],
      **self._hyper(),
    )
    return (loss, *(metrics[name] for name in _NAMES))

  def _hyper(self) -> dict[str, Any]:
    return dict(
      margin=self.margin,
      temperature=self.tau,
      sndcg_weight=self.sndcg_weight,
      orientation=self.orientation,
    )

  def _global_rows(self, v, t, v_text_emb, t_text_emb):
    """Global ranking, each process computing its own queries' terms
    (:func:`jitr.losses.triplet_sndcg.triplet_sndcg_rows`) against the gathered batch."""
    world, rank, b = distributed.world_size(), distributed.rank(), v.shape[0]
    v_all, t_all = distributed.all_gather(v), distributed.all_gather(t)
    n = v_all.shape[0]  # W·b pairs, rank-major
    rows, size = max(b, self.batch_size), max(n, world * self.batch_size)
    dtype = v.dtype
    refs = distributed.all_gather(v_text_emb.to(v.device, dtype))
    caps = distributed.all_gather(t_text_emb.to(v.device, dtype))
    positions = torch.arange(rows, device=v.device)
    index = torch.where(positions < b, rank * b + positions, -1).to(torch.int32)
    share, sums = bridge.loss(
      triplet_sndcg_rows,
      buckets.pad_matrix(v @ t_all.T, rows, size),
      buckets.pad_matrix(t @ v_all.T, rows, size),
      _pad_rows(refs, size),
      _pad_rows(caps, size),
      index,
      torch.arange(size, device=v.device) < n,
      torch.tensor(n, dtype=dtype, device=v.device),
      **self._hyper(),
    )
    total = distributed.all_sum(torch.stack([share, *(sums[k] for k in _SUMS)]))
    value, by_name = total[0], dict(zip(_SUMS, total[1:]))
    # The value is the global loss; the gradient W·∂share (DDP's mean over W gives ∂L/∂θ).
    loss = world * share + (value - world * share).detach()
    metrics = {
      "pairwise": by_name["pairwise"],
      "listwise": by_name["listwise"],
      "ndcg_t": by_name["ndcg_t"] / by_name["count_t"].clamp(min=1),
      "ndcg_v": by_name["ndcg_v"] / by_name["count_v"].clamp(min=1),
      "real_ndcg_t": by_name["real_ndcg_t"] / by_name["real_count_t"].clamp(min=1),
      "real_ndcg_v": by_name["real_ndcg_v"] / by_name["real_count_v"].clamp(min=1),
    }
    return (loss, *(metrics[name] for name in _NAMES))
