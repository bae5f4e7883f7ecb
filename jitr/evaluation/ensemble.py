"""Ensembles of retrieval models: the mean of their similarity matrices.

SGRAF is the mean of a trained SGR's and a trained SAF's ``sim`` (Diao et al.);
VSRN's published numbers average two VSRN models' ``sim`` (Li et al.): both are
:func:`mean_similarity` of the members' matrices over the same split.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def mean_similarity(sims: Sequence[np.ndarray]) -> np.ndarray:
  """``(1/M) Σ_m sim_m`` (float32; accumulated in float64) of ``M >= 1`` matrices of one shape.

  For two members it equals ``(sim_1 + sim_2) / 2`` in float32 exactly (halving is exact),
  e.g. :func:`jitr.models.sgraf_similarity`.

  >>> mean_similarity([np.array([[1.0, 0.0]]), np.array([[0.5, 1.0]])])
  array([[0.75, 0.5 ]], dtype=float32)
  """
  if not len(sims):
    raise ValueError("mean_similarity: sims is empty; expected at least one matrix")
  shapes = [np.shape(s) for s in sims]
  if len(shapes[0]) != 2 or any(s != shapes[0] for s in shapes):
    raise ValueError(
      f"mean_similarity: expected matrices of one shape [N_img, N_cap], got {shapes}"
    )
  total = np.zeros(shapes[0], np.float64)
  for s in sims:
    total += np.asarray(s, np.float64)
  return (total / len(sims)).astype(np.float32)
