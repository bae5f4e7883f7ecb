"""The training recipe every train-step benchmark shares (scripts/bench_train.py,
scripts/bench_models.py): Adam 2e-4 after global-norm clipping at 2, and the VSE++
max-violation triplet (LMH, margin 0.2, both directions), in jitr and in PyTorch."""

from __future__ import annotations

import torch

MARGIN = 0.2
LR = 2e-4
CLIP = 2.0
OPTIMIZER = {"name": "adam", "learning_rate": LR, "grad_clip": CLIP}
OBJECTIVE = {"triplet": {"weight": 1.0, "mining": "max", "margin": MARGIN}}


def torch_triplet(sim: torch.Tensor) -> torch.Tensor:
  """VSE++ max-violation (LMH), both directions, mean over queries (as jitr):
  ``mean_i [α + max_{j≠i} s_ij − s_ii]_+ + mean_j [α + max_{i≠j} s_ij − s_jj]_+``."""
  d = sim.diag()
  eye = torch.eye(sim.shape[0], dtype=torch.bool)
  neg = sim.masked_fill(eye, float("-inf"))
  i2t = torch.relu(MARGIN + neg.max(dim=1).values - d)
  t2i = torch.relu(MARGIN + neg.max(dim=0).values - d)
  return i2t.mean() + t2i.mean()
