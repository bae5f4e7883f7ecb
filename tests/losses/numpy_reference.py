"""Independent, loop-based numpy versions of every loss (the slow, obvious way).

They follow the papers' formulas directly, with none of jitr's tricks (no sort
for LSH, no custom VJP, no blocking), so agreement is a real check.
"""

import math

import numpy as np


def _directions(sim, positives, where, *mats):
  yield sim, positives, where, mats
  yield sim.T, positives.T, where.T, tuple(m.T for m in mats)


def _split(pos, w, q):
  """Valid positives and valid negatives of query row q."""
  cols = range(pos.shape[1])
  return [j for j in cols if pos[q, j] and w[q, j]], [j for j in cols if not pos[q, j] and w[q, j]]


def _mean_over(values):
  return float(np.mean(values)) if values else 0.0


def triplet(sim, positives, where, margin=0.2, mining="max", reduction="mean"):
  total = 0.0
  for s, pos, w, _ in _directions(sim, positives, where):
    per_query = []
    for q in range(s.shape[0]):
      ps, ns = _split(pos, w, q)
      if not ps:
        continue
      vals = []
      for p in ps:
        hinges = [max(0.0, margin + s[q, n] - s[q, p]) for n in ns]
        vals.append((max(hinges) if hinges else 0.0) if mining == "max" else sum(hinges))
      per_query.append(np.mean(vals))
    total += _mean_over(per_query) if reduction == "mean" else float(np.sum(per_query))
  return total


def dcg_ndcg(ranks, rel, valid, top_m=None):
  """NDCG from (soft) ranks; ``top_m``: DCG and IDCG over the ``top_m`` valid items of the
  largest gains (ties: the first index)."""
  kept = [j for j in range(len(rel)) if valid[j]]
  if top_m is not None:
    kept = sorted(kept, key=lambda j: (-(2.0 ** max(rel[j], 0.0) - 1.0), j))[:top_m]
  gains = [2.0 ** rel[j] - 1.0 for j in kept]
  dcg = sum((2.0 ** rel[j] - 1.0) / math.log2(1.0 + ranks[j]) for j in kept)
  ideal = sorted(gains, reverse=True)
  idcg = sum(g / math.log2(2.0 + i) for i, g in enumerate(ideal))
  return (dcg / idcg if idcg > 0 else 0.0), idcg > 0


def approx_ranks(scores, valid, tau):
  n = len(scores)
  out = np.ones(n)
  for i in range(n):
    if not valid[i]:
      continue
    for j in range(n):
      if j != i and valid[j]:
        out[i] += 1.0 / (1.0 + math.exp(-(scores[j] - scores[i]) / tau))
  return out


def exact_ndcg(scores, rel, valid=None, top_k=None):
  valid = np.ones(len(scores), bool) if valid is None else valid
  order = sorted([j for j in range(len(scores)) if valid[j]], key=lambda j: (-scores[j], j))
  ranks = np.zeros(len(scores))
  for r, j in enumerate(order):
    ranks[j] = r + 1
  gains = {j: 2.0 ** rel[j] - 1.0 for j in order}
  k = len(order) if top_k is None else top_k
  dcg = sum(gains[j] / math.log2(1 + ranks[j]) for j in order if ranks[j] <= k)
  ideal = sorted(gains.values(), reverse=True)[:k]
  idcg = sum(g / math.log2(2.0 + i) for i, g in enumerate(ideal))
  return dcg / idcg if idcg > 0 else 0.0


def smooth_ndcg(sim, relevance, where, tau, positives=None, top_m=None):
  rel = relevance if positives is None else np.where(positives, 1.0, relevance)
  total = 0.0
  for s, _, w, (r,) in _directions(sim, np.zeros_like(where), where, rel):
    per_query = []
    for q in range(s.shape[0]):
      if not w[q].any():
        continue
      value, ok = dcg_ndcg(approx_ranks(s[q], w[q], tau), r[q], w[q], top_m)
      if ok:
        per_query.append(1.0 - value)
    total += _mean_over(per_query)
  return total


def adaptive_listwise(sim, positives, where, beta=0.5, alpha=0.4):
  out = []
  for s, pos, w, _ in _directions(sim, positives, where):
    per_query = []
    for q in range(s.shape[0]):
      ps, ns = _split(pos, w, q)
      ns = sorted(ns, key=lambda j: (-s[q, j], j))
      if not ps:
        continue
      n = len(ns) + 1
      margins = {
        k: (0.75 if n == 2 else 0.75 - (rank - 2) / (2 * (n - 2)))
        for rank, k in enumerate(ns, start=2)
      }
      vals = [
        math.log(1 + sum(math.exp((s[q, k] - s[q, p] + margins[k]) / beta) for k in ns)) for p in ps
      ]
      per_query.append(np.mean(vals))
    out.append(_mean_over(per_query))
  return alpha * out[0] + (1 - alpha) * out[1]


def semantic_margin(sim, metric, positives, where, tau, sampling, max_margin=None):
  total = 0.0
  for s, pos, w, (phi,) in _directions(sim, positives, where, metric):
    per_query = []
    for q in range(s.shape[0]):
      ps, ns = _split(pos, w, q)
      if not ps:
        continue
      if not ns:
        per_query.append(0.0)
        continue
      m = max(ns, key=lambda j: s[q, j]) if sampling == "hard" else min(ns, key=lambda j: s[q, j])
      vals = []
      for p in ps:
        a = (phi[q, p] - phi[q, m]) / tau
        if max_margin is not None:
          a = min(a, max_margin)
        vals.append(max(0.0, a + s[q, m] - s[q, p]))
      per_query.append(np.mean(vals))
    total += _mean_over(per_query)
  return total


def semantic_hard_negatives(sim, semantic, positives, where, alpha=0.185, lam=0.025):
  total = 0.0
  for s, pos, w, (sem,) in _directions(sim, positives, where, semantic):
    per_query = []
    for q in range(s.shape[0]):
      ps, ns = _split(pos, w, q)
      if not ps:
        continue
      vals = [
        max([max(0.0, alpha + s[q, n] + lam * sem[q, n] - s[q, p]) for n in ns], default=0.0)
        for p in ps
      ]
      per_query.append(np.mean(vals))
    total += _mean_over(per_query)
  return total


def rsc_relevance(refs, caps, positives=None):
  refs = refs / np.linalg.norm(refs, axis=-1, keepdims=True)
  caps = caps / np.linalg.norm(caps, axis=-1, keepdims=True)
  out = np.zeros((refs.shape[0], caps.shape[0]))
  for i in range(refs.shape[0]):
    for j in range(caps.shape[0]):
      out[i, j] = (1 + max(float(refs[i, k] @ caps[j]) for k in range(refs.shape[1]))) / 2
  if positives is not None:
    out[positives] = 1.0
  return out
