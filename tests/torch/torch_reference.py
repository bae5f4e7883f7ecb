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


def smooth_ndcg_rows(sim, relevance, tau, top_m=None):
  """Per row ``1 − Σ_j (2^{r_j} − 1)/log2(1 + π̂_j) / IDCG`` with
  ``π̂_j = 1 + Σ_{k≠j} σ((s_k − s_j)/τ)`` and IDCG from the sorted gains; ``top_m``: both
  sums over the row's ``top_m`` largest gains only (ranks still over the whole row)."""
  n = sim.shape[1]
  diff = sim[:, None, :] - sim[:, :, None]  # [q, j, k] = s_k − s_j
  off = ~torch.eye(n, dtype=torch.bool)
  ranks = 1 + (torch.sigmoid(diff / tau) * off).sum(-1)
  gains = 2**relevance - 1
  ideal, order = gains.sort(dim=-1, descending=True, stable=True)
  kept = torch.ones_like(gains, dtype=torch.bool)
  if top_m is not None:
    kept = torch.zeros_like(kept).scatter(-1, order[:, :top_m], True)
    ideal = ideal[:, :top_m]
  dcg = (gains / torch.log2(1 + ranks) * kept).sum(-1)
  positions = torch.arange(1, ideal.shape[1] + 1, dtype=sim.dtype)
  idcg = (ideal / torch.log2(1 + positions)).sum(-1)
  return 1 - dcg / idcg


def smooth_ndcg(sim, relevance, tau, top_m=None):
  """Both directions, mean over queries: rows of ``sim``, then rows of ``sim.T``."""
  return (
    smooth_ndcg_rows(sim, relevance, tau, top_m).mean()
    + smooth_ndcg_rows(sim.T, relevance.T, tau, top_m).mean()
  )


def _off_diagonal(n):
  return ~torch.eye(n, dtype=torch.bool)


def semantic_hard_negatives(sim, semantic, margin=0.185, semantic_weight=0.025):
  """LSEH: ``mean_q max_{n≠q} [α + s_qn + λ·S_qn − s_qq]_+`` in both directions, summed."""
  total = 0.0
  for s, sem in ((sim, semantic), (sim.T, semantic.T)):
    neg = _off_diagonal(s.shape[0])
    hinge = (margin + s + semantic_weight * sem - s.diag()[:, None]).clamp(min=0) * neg
    total = total + hinge.max(dim=1)[0].mean()
  return total


def adaptive_listwise(sim, sharpness=0.5, alpha=0.4):
  """CMAL²R: ``log(1 + Σ_{k≠q} exp((s_qk − s_qq + m_k)/β))``, ``m_k = 3/4 − (rank_k − 2) /
  (2(n − 2))`` from the descending order of the negatives (rank 2 the hardest, no gradient
  through it), mean over queries, ``α·i2t + (1 − α)·t2i``."""
  out = []
  for s in (sim, sim.T):
    n = s.shape[0]
    neg = _off_diagonal(n)
    negatives = s.detach().masked_fill(~neg, float("-inf"))
    order = negatives.argsort(dim=1, descending=True)  # the query's own column sorts last
    ranks = torch.empty_like(order)
    ranks.scatter_(1, order, torch.arange(2, n + 2).expand(n, n))
    margins = 0.75 - (ranks - 2).to(s.dtype) / (2 * (n - 2))
    terms = torch.exp((s - s.diag()[:, None] + margins) / sharpness) * neg
    out.append(torch.log1p(terms.sum(dim=1)).mean())
  return alpha * out[0] + (1 - alpha) * out[1]


def semantic_margin_triplet(sim, metric, temperature=5.0):
  """SAM, hard sampling: per query the hardest negative m, margin
  ``(φ_qq − φ_qm)/τ``, ``[margin + s_qm − s_qq]_+``, mean over queries, both directions."""
  total = 0.0
  for s, phi in ((sim, metric), (sim.T, metric.T)):
    n = s.shape[0]
    hardest = s.detach().masked_fill(~_off_diagonal(n), float("-inf")).argmax(dim=1)
    rows = torch.arange(n)
    margin = (phi.diag() - phi[rows, hardest]) / temperature
    total = total + (margin + s[rows, hardest] - s.diag()).clamp(min=0).mean()
  return total
