"""Listwise ITR's ``TripletSNDCGLoss.forward`` (AAA-Zheng/Listwise_ITR ``model.py``) as a
function, written from its code for CPU: dense ``[N, N, N]`` pairwise differences, ties
sharing ranks, the clamped sigmoid. ``corrected=True`` ranks images for a caption query by
the transposed relevance (the only change)."""

import torch


def _sigmoid(x, tau):
  return 1.0 / (1.0 + torch.exp(torch.clamp(-x / tau, min=-50, max=50)))


def _ranks_above(x):
  """``[q, j] = 1 + #{k: x[q, k] > x[q, j]}``."""
  diff = x[:, None, :] - x[:, :, None]
  return (diff > 0).to(x.dtype).sum(-1) + 1


def _direction(scores, relevance, neg_mask, tau):
  """``(1 − NDCĜ per query, real NDCG per query)`` of the rows of ``scores``."""
  idcg = ((2**relevance - 1) / torch.log2(1 + _ranks_above(relevance))).sum(-1)
  diff = scores[:, None, :] - scores[:, :, None]
  rank = (_sigmoid(diff, tau) * neg_mask).sum(-1) + 1
  dcg = ((2**relevance - 1) / torch.log2(1 + rank)).sum(-1)
  real_dcg = ((2**relevance - 1) / torch.log2(1 + _ranks_above(scores))).sum(-1)
  return 1 - dcg / idcg, real_dcg / idcg


def triplet_sndcg(v, t, v_text_emb, t_text_emb, margin, tau, sndcg_weight, corrected=False):
  n = v.size(0)
  scores = v.mm(t.t())
  pos = scores.diag().view(n, 1)
  pos_mask = torch.eye(n, dtype=scores.dtype)
  neg_mask = 1 - pos_mask
  refs = v_text_emb.transpose(0, 1)
  refs = refs / refs.norm(dim=2, keepdim=True)
  caps = t_text_emb / t_text_emb.norm(dim=1, keepdim=True)
  relevance = torch.einsum("kie,je->kij", refs, caps).max(0)[0]
  relevance = ((1 + relevance) / 2) * neg_mask + pos_mask

  loss_t = ((scores - pos.expand_as(scores) + margin).clamp(min=0) * neg_mask).max(1)[0]
  loss_v = ((scores - pos.t().expand_as(scores) + margin).clamp(min=0) * neg_mask).max(0)[0]
  pairwise = (loss_t.mean() + loss_v.mean()) / 2

  lt, real_t = _direction(scores, relevance, neg_mask, tau)
  lv, real_v = _direction(scores.t(), relevance.t() if corrected else relevance, neg_mask, tau)
  listwise = (lt.mean() + lv.mean()) / 2
  loss = (1 - sndcg_weight) * pairwise + sndcg_weight * listwise
  return loss, pairwise, listwise, 1 - lt.mean(), real_t.mean(), 1 - lv.mean(), real_v.mean()
