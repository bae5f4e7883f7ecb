"""A drop-in for Listwise ITR's ``TripletSNDCGLoss`` (AAA-Zheng/Listwise_ITR ``model.py``).

Same construction (an ``opt`` with ``margin``, ``tau``, ``sndcg_weight``,
``batch_size``), same ``forward(v, t, v_text_emb, t_text_emb)`` and the same
7-tuple; the loss runs as jitr's jitted JAX function
(:func:`jitr.torch.triplet_sndcg.triplet_sndcg`) through the DLPack bridge.
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from jitr.torch import bridge, buckets, distributed
from jitr.torch.triplet_sndcg import ORIENTATIONS, Orientation, triplet_sndcg

__all__ = ["TripletSNDCGLoss"]

RANKINGS = ("local", "global")
_NAMES = ("pairwise", "listwise", "ndcg_t", "real_ndcg_t", "ndcg_v", "real_ndcg_v")


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
  every process first (:mod:`jitr.torch.distributed`), so with
  DistributedDataParallel W processes of N pairs train exactly as one process
  of W·N pairs (padding then applies to the gathered batch, up to
  ``W·opt.batch_size``).

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
    batch_size = self.batch_size
    if self.ranking == "global":
      v, t = distributed.all_gather(v), distributed.all_gather(t)
      v_text_emb = distributed.all_gather(v_text_emb.to(v.device))
      t_text_emb = distributed.all_gather(t_text_emb.to(v.device))
      batch_size *= distributed.world_size()
    n = v.shape[0]
    size = max(n, batch_size)
    scores = buckets.pad_matrix(v @ t.T, size, size)
    valid = torch.arange(size, device=v.device) < n
    loss, metrics = bridge.loss(
      triplet_sndcg,
      scores,
      _pad_rows(v_text_emb.to(v.device, scores.dtype), size),
      _pad_rows(t_text_emb.to(v.device, scores.dtype), size),
      where=valid[:, None] & valid[None, :],
      margin=self.margin,
      temperature=self.tau,
      sndcg_weight=self.sndcg_weight,
      orientation=self.orientation,
    )
    return (loss, *(metrics[name] for name in _NAMES))
