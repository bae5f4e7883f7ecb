"""Independent PyTorch versions of the losses, written from their formulas (dense, no masks
beyond the ones named), for parity with the bridge."""

import torch


def triplet(sim, margin=0.2, mining="max"):
  """VSE++ with one positive per query on the diagonal, mean over queries, both directions:
  ``mean_i h(row i) + mean_j h(column j)``, ``h = max_n`` or ``Σ_n`` of
  ``[margin + s_n − s_p]_+``."""
  n = sim.shape[0]
  neg = ~torch.eye(n, dtype=torch.bool)
  pos = sim.diag()
  hinge_i2t = (margin + sim - pos[:, None]).clamp(min=0) * neg
  hinge_t2i = (margin + sim - pos[None, :]).clamp(min=0) * neg
  if mining == "max":
    return hinge_i2t.max(dim=1)[0].mean() + hinge_t2i.max(dim=0)[0].mean()
  return hinge_i2t.sum(dim=1).mean() + hinge_t2i.sum(dim=0).mean()


def smooth_ndcg_rows(sim, relevance, tau):
  """Per row ``1 − Σ_j (2^{r_j} − 1)/log2(1 + π̂_j) / IDCG`` with
  ``π̂_j = 1 + Σ_{k≠j} σ((s_k − s_j)/τ)`` and IDCG from the sorted gains."""
  n = sim.shape[1]
  diff = sim[:, None, :] - sim[:, :, None]  # [q, j, k] = s_k − s_j
  off = ~torch.eye(n, dtype=torch.bool)
  ranks = 1 + (torch.sigmoid(diff / tau) * off).sum(-1)
  gains = 2**relevance - 1
  dcg = (gains / torch.log2(1 + ranks)).sum(-1)
  ideal = gains.sort(dim=-1, descending=True)[0]
  positions = torch.arange(1, n + 1, dtype=sim.dtype)
  idcg = (ideal / torch.log2(1 + positions)).sum(-1)
  return 1 - dcg / idcg


def smooth_ndcg(sim, relevance, tau):
  """Both directions, mean over queries: rows of ``sim``, then rows of ``sim.T``."""
  return (
    smooth_ndcg_rows(sim, relevance, tau).mean() + smooth_ndcg_rows(sim.T, relevance.T, tau).mean()
  )
