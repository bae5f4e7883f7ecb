"""How far a similarity matrix is from a tie that decides a rank.

Two implementations of one model (the official code transcribed in PyTorch, and jitr) give
similarities equal to about 1e-6, not bit for bit: threads and kernels round differently.
A rank or recall compared for exact equality between them is only as stable as the
smallest gap between a query's decisive score and any other score of that query. The
tests that compare the official protocol's numbers check that gap first, so a tie (two
captions with the same token ids, say) fails as a tie, not as a wrong recall on one
machine."""

from __future__ import annotations

import numpy as np


def smallest_rank_gap(sims: np.ndarray, per_image: int = 5) -> float:
  """The smallest ``|s_q,p − s_q,j|`` over every query ``q`` of the official protocol, with
  ``p`` the score that decides its rank and ``j`` any other candidate:

  - image→text: image ``i``'s captions are ``per_image·i … per_image·i + per_image − 1``;
    its rank is that of its best-scored caption ``p``, compared with every other caption;
  - text→image: caption ``c``'s image is ``c // per_image``, compared with every other
    image.

  ``sims`` is ``[images, per_image · images]``."""
  sims = np.asarray(sims, np.float64)
  n_images, n_captions = sims.shape
  if n_captions != per_image * n_images:
    raise ValueError(f"sims {sims.shape}: expected {per_image} captions per image")
  gaps = []
  for i in range(n_images):
    own = slice(per_image * i, per_image * (i + 1))
    best = per_image * i + int(np.argmax(sims[i, own]))
    others = np.delete(sims[i], best)
    gaps.append(np.min(np.abs(others - sims[i, best])))
  for c in range(n_captions):
    image = c // per_image
    others = np.delete(sims[:, c], image)
    gaps.append(np.min(np.abs(others - sims[image, c])))
  return float(min(gaps))
