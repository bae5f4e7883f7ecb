"""CVSE's evaluation-time concept-label completion and mixed similarity.

CVSE (Wang et al., ECCV 2020; BruceW91/CVSE, ``evaluation.py`` @ ab948b7 and
``util/utils.py`` @ d4a0b4e) evaluates in two passes. ``encode_data`` embeds every image
row and caption (fused embeddings ``img_embs`` / ``cap_embs``, consensus embeddings
``img_emb_cons`` / ``cap_emb_cons``) and reads each caption's concept labels;
``label_complete`` finds, for each caption ``i``, a neighbour list ``N(i)``;
``encode_data_KNN_rerank`` replaces each caption's labels by

    l'_i = max(l_i, max_{j in N(i)} l_j)          (elementwise, the original labels)

and embeds everything again with ``l'``; the final scores are

    d(v, t) = w * <f_v, f_t> + (1 - w) * <c_v, c_t>,     w = 0.95,

with ``f`` the fused and ``c`` the consensus embeddings (``i2t_sep_sim`` /
``t2i_sep_sim``). The neighbour lists merge two searches:

- ``A(i)`` (:func:`caption_neighbours_t2t`, ``construct_H_with_KNN``): the ``K = 10``
  captions most similar to ``i``, by ``S = max(X X^T, (X X^T)^T)`` with the diagonal
  set to 0;
- ``B(i)`` (:func:`image_ranking_neighbours`, ``calculate_sim`` +
  ``construct_N_with_KNN``): with ``v*(i)`` the image most similar to caption ``i``,
  ``K = 3`` consecutive captions of ``v*(i)``'s caption ranking around ``i``'s position;
- ``N(i) = [a for a in A(i) if a in B(i)]`` (in ``A``'s order) when that has 3 entries,
  else ``A(i)[:3] + B(i)[:4]`` for Flickr30K and ``A(i)[:2] + B(i)[:1]`` for COCO
  (:func:`completion_neighbours`).

Layout. The official arrays have one row per caption: image ``j``'s embedding is
repeated on rows ``5j .. 5j+4`` and caption ``i`` belongs to image ``i // 5``. Here images
are given once per image: ``img_embs_per_image = img_embs[::5]`` (the rows
``calculate_sim`` and the ``*_sep_sim`` functions read), and likewise
``img_emb_cons[::5]`` for :func:`mixed_similarity`; captions keep the official order.
The official code needs ``Nc == 5 Ni``; these functions accept any ``Nc``.

Ties. Every ordering here is by score descending, ties broken by the lower index
(``np.argsort(-s, kind="stable")``). The official code leaves ties to unstable sorts
(``torch.sort``, numpy's default quicksort), and its final ranking ``argsort(d)[::-1]``
puts the higher index first; results can differ only on exactly equal scores.

Quirks of the official code (kept unless said otherwise) are listed in each function's
docstring; the ones across functions:

- Since ``B(i)`` always contains ``i`` (see :func:`image_ranking_neighbours`) and
  ``A(i)`` contains ``i`` only when fewer than 10 other captions have a positive
  similarity to it (see :func:`caption_neighbours_t2t`), the intersection reaches 3
  entries only for such captions: with the usual positive similarities of trained
  embeddings, the dataset fallback is taken for (nearly) every caption.
- ``encode_data_KNN_rerank`` ``append`` s the caption's own index to the list stored in
  ``label_complete``'s result (mutating it: a second pass would append it again) and
  only accepts a Python list of lists: any other container goes through
  ``.astype(int)``, and its rows, numpy arrays, have no ``append``. The Flickr30K lists
  are ragged (3 or 6 entries), so they cannot be made a numpy array either: numpy >= 1.24
  raises ``ValueError`` ("inhomogeneous shape") where older numpy built an object array
  with a ``VisibleDeprecationWarning``. :func:`complete_labels` takes ragged lists (or an
  int array) and never mutates them.
- The completion uses the labels from the first pass for every neighbour (one hop; a
  completed label is not propagated further).
- ``evalrank``'s ``fuse_weight`` (0.85 Flickr30K, 0.9 COCO) is the model's ``alpha``
  for both encoding passes, not the ``w = 0.95`` of the final scores; the ``*_sep_sim``
  functions default to ``weight_fused=0.8`` but ``evalrank`` passes 0.95.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

__all__ = [
  "DATASETS",
  "caption_neighbours_t2t",
  "image_ranking_neighbours",
  "completion_neighbours",
  "complete_labels",
  "mixed_similarity",
]

# Official `label_complete`: minimum intersection size and the per-dataset fallback
# `A[:n_t2t] + B[:n_i2t]`.
MIN_COMMON = 3
DATASETS: dict[str, tuple[int, int]] = {"f30k": (3, 4), "coco": (2, 1)}
T2T_NEIGHBOURS = 10
I2T_NEIGHBOURS = 3
_CHUNK = 1024


def _matrix(name: str, x, dtype=None) -> np.ndarray:
  """``x`` as a finite 2-D array (cast to ``dtype`` when given)."""
  a = np.asarray(x) if dtype is None else np.asarray(x, dtype)
  if a.ndim != 2:
    raise ValueError(f"`{name}` must be 2-D, got shape {a.shape}")
  if not np.issubdtype(a.dtype, np.number) or not np.isfinite(a).all():
    raise ValueError(f"`{name}` must hold finite numbers")
  return a


def _stable_top_k(s: np.ndarray, k: int) -> np.ndarray:
  """Column indices of each row's ``k`` largest scores, best first, ties to the lower index.

  Equal to ``np.argsort(-s, axis=1, kind="stable")[:, :k]`` without the full sort: the
  ``k``-th largest value ``t`` of a row is found by partition, every column above ``t``
  is kept and the lowest-index columns equal to ``t`` fill the rest.
  """
  n = s.shape[1]
  if k >= n:
    return np.argsort(-s, axis=1, kind="stable")[:, :k]
  kth = -np.partition(-s, k - 1, axis=1)[:, k - 1 : k]
  above = s > kth
  tied = s == kth
  room = k - above.sum(axis=1, keepdims=True)
  take = above | (tied & (np.cumsum(tied, axis=1) <= room))
  cols = np.nonzero(take)[1].reshape(s.shape[0], k)
  order = np.argsort(-np.take_along_axis(s, cols, axis=1), axis=1, kind="stable")
  return np.take_along_axis(cols, order, axis=1)


def caption_neighbours_t2t(cap_embs, k: int = T2T_NEIGHBOURS, *, dtype=np.float32) -> np.ndarray:
  """``A``: each caption's ``k`` nearest captions (``construct_H_with_KNN``, index mode).

  With ``X`` the ``[Nc, D]`` caption embeddings and ``S = max(X X^T, (X X^T)^T)``
  (elementwise; ``Cos_dis``), row ``i`` of the result is the ``k`` columns of
  ``S_i`` with the largest values, best first, after ``S_ii`` is set to 0.

  Quirks of the official code, kept:

  - The caption itself is not excluded, nor is it its own nearest neighbour: its
    similarity is replaced by 0, so it is among its ``k`` neighbours exactly when fewer
    than ``k`` other captions have a positive similarity to it (ties at 0 aside), at the
    position of its 0 among the others. (The matrix-building mode of the same function
    forces the centre into its hyperedge; the index mode used here does not.)
  - ``label_complete`` passes ``torch.Tensor(cap_embs)``: the float64 embeddings are
    cast to float32 and ``S`` is computed in float32 (``dtype``; ``None`` keeps the input
    dtype). The indices are stored in a float32 tensor, exact below ``2**24`` captions.
  - ``max(S, S^T)`` only matters in the last bits of the float products; it is kept.
  - ``k > Nc`` fails in the official code (a short row assigned to ``k`` slots); here it
    raises ``ValueError``. Ties: lower index first (``torch.sort`` leaves them open).

  Args:
    cap_embs: ``[Nc, D]`` fused caption embeddings (official ``cap_embs``).
    k: neighbours per caption (official ``K_neigs=10``).
    dtype: dtype of the similarity computation.

  Returns:
    ``[Nc, k]`` int64 caption indices.
  """
  x = _matrix("cap_embs", cap_embs, dtype)
  n = x.shape[0]
  if not 1 <= k <= n:
    raise ValueError(f"`k` must be in [1, {n}] (the number of captions), got {k}")
  out = np.empty((n, k), np.int64)
  for lo in range(0, n, _CHUNK):
    hi = min(lo + _CHUNK, n)
    s = np.maximum(x[lo:hi] @ x.T, (x @ x[lo:hi].T).T)
    s[np.arange(hi - lo), np.arange(lo, hi)] = 0
    out[lo:hi] = _stable_top_k(s, k)
  return out


def _window_start(p: np.ndarray, n: int, k: int) -> np.ndarray:
  """First ranking position of each caption's window, ``p`` its own position.

  ``construct_N_with_KNN``'s cases, with ``h = floor(k / 2)``:
  ``p >= n - k``: ``n - k``; else ``k == 3 and p > 1``: ``p - 1``; else ``k > 3``,
  even: ``p - h``, odd: ``p - h - 1``; else ``0``.
  """
  h = k // 2
  if k == 3:
    start = np.where(p > 1, p - 1, 0)
  elif k > 3:
    start = p - h - (k % 2)
  else:
    start = np.zeros_like(p)
  return np.where(p >= n - k, n - k, start)


def image_ranking_neighbours(sim_image_caption, k: int = I2T_NEIGHBOURS) -> np.ndarray:
  """``B``: ``k`` captions around each caption in its nearest image's ranking.

  ``construct_N_with_KNN`` on ``calculate_sim``'s ``[Ni, Nc]`` image-to-caption scores
  ``s``. For caption ``i``: ``v = argmax_j s_ji`` (its nearest image), ``R`` =
  the captions ordered by ``s_v`` descending, ``p`` = the position of ``i`` in ``R``, and
  the result is ``R[q : q + k]`` with (``h = floor(k / 2)``, ``n = Nc``)

  - ``q = n - k`` if ``p >= n - k`` (the last ``k`` of the ranking);
  - else ``q = p - 1`` if ``k == 3 and p > 1`` (``i`` with one caption either side);
  - else ``q = p - h`` (``k > 3`` even) or ``q = p - h - 1`` (``k > 3`` odd);
  - else ``q = 0`` (the top ``k``).

  Quirks of the official code, kept:

  - The end fallback starts at ``p >= n - k``, two positions earlier than needed for
    ``k = 3``: at ``p = n - 3`` the centred window would fit, yet the last three are
    taken (``i`` and the two after it); at ``p = n - 2`` the last three are the centred
    window anyway; only ``p = n - 1`` needs the fallback.
  - ``p = 0`` and ``p = 1`` (``p > 1`` fails) take the top three; for ``p = 1`` that is
    the centred window anyway, for ``p = 0`` it is ``i`` and the two after it. So for
    ``k = 3`` the window always contains ``i`` itself.
  - ``k > 3``: the odd window is not centred (``h + 1`` before ``i``, ``h - 1`` after).
    Near the top of the ranking ``q < 0`` and the official slice is empty, which numpy
    refuses to assign (``ValueError``); the caption of the largest score is always at
    ``p = 0`` of its nearest image, so with ``n > k`` the official code always fails for
    ``k > 3``. Here the same case raises ``ValueError``.
  - ``k < 3`` always takes the top ``k`` (or the last ``k``), which need not contain ``i``.
  - ``k > n`` fails in the official code (``R[-k:]`` is short); here ``ValueError``.
  - Ties (official: numpy's unstable default sort, also for the nearest image): the
    lower index first, so ``v`` is the first maximum.

  Args:
    sim_image_caption: ``[Ni, Nc]`` scores, one row per image (official
      ``calculate_sim(img_embs, cap_embs)``, i.e. ``img_embs[::5] @ cap_embs.T``).
    k: window length (official ``K_neigs=3``).

  Returns:
    ``[Nc, k]`` int64 caption indices, in ranking order.
  """
  s = _matrix("sim_image_caption", sim_image_caption)
  n = s.shape[1]
  if not 1 <= k <= n:
    raise ValueError(f"`k` must be in [1, {n}] (the number of captions), got {k}")
  nearest = np.argmax(s, axis=0)
  out = np.empty((n, k), np.int64)
  for v in np.unique(nearest):
    caps = np.flatnonzero(nearest == v)
    ranking = np.argsort(-s[v], kind="stable")
    position = np.empty(n, np.int64)
    position[ranking] = np.arange(n)
    start = _window_start(position[caps], n, k)
    if (start < 0).any():
      bad = int(caps[np.argmax(start < 0)])
      raise ValueError(
        f"k={k}: caption {bad} is at position {position[bad]} of its nearest image's "
        f"ranking, too close to the top for the official k > 3 window (the official code "
        f"fails here too)"
      )
    out[caps] = ranking[start[:, None] + np.arange(k)]
  return out


def _merge(a: Sequence[int], b: Sequence[int], fallback: tuple[int, int]) -> list[int]:
  """``[x for x in a if x in b]`` if it has ``MIN_COMMON`` entries, else ``a[:m] + b[:r]``."""
  common = [x for x in a if x in b]
  if len(common) >= MIN_COMMON:
    return common
  m, r = fallback
  return list(a[:m]) + list(b[:r])


def completion_neighbours(cap_embs, img_embs_per_image, dataset: str) -> list[list[int]]:
  """``N(i)``, the captions whose labels complete caption ``i``'s (``label_complete``).

  ``A = caption_neighbours_t2t(cap_embs, 10)`` (float32, as the official code),
  ``B = image_ranking_neighbours(img_embs_per_image @ cap_embs.T, 3)`` (float64, the
  dtype of ``encode_data``'s arrays), and

      N(i) = [a for a in A(i) if a in B(i)]    if that has >= 3 entries,
      N(i) = A(i)[:3] + B(i)[:4]               else, Flickr30K,
      N(i) = A(i)[:2] + B(i)[:1]               else, COCO.

  Quirks of the official code, kept:

  - ``B(i)`` has only 3 entries, so the Flickr30K fallback ``B(i)[:4]`` is all of
    ``B(i)``: 6 entries, possibly repeated (``i`` itself, or a caption in both).
    The lists are therefore ragged for Flickr30K (3 or 6 entries); COCO's have 3.
  - The intersection keeps ``A``'s order and has at most 3 entries (all of ``B(i)``,
    hence ``i`` itself; see the module docstring for why it is rarely reached).
  - The official dataset test is by substring on ``data_name`` (``'f30k' in name``
    first, then ``'coco' in name``; e.g. ``f30k_precomp``); a name with neither keeps the
    short intersection (maybe empty). Here ``dataset`` must be exactly ``"f30k"`` or
    ``"coco"``, else ``ValueError``.

  Args:
    cap_embs: ``[Nc, D]`` fused caption embeddings of the first pass.
    img_embs_per_image: ``[Ni, D]`` fused image embeddings, one row per image (official
      ``img_embs[::5]``).
    dataset: ``"f30k"`` or ``"coco"``.

  Returns:
    ``Nc`` lists of caption indices (Python ints).
  """
  if dataset not in DATASETS:
    raise ValueError(f"`dataset` must be one of {sorted(DATASETS)}, got {dataset!r}")
  caps = _matrix("cap_embs", cap_embs, np.float64)
  imgs = _matrix("img_embs_per_image", img_embs_per_image, np.float64)
  if imgs.shape[1] != caps.shape[1]:
    raise ValueError(
      f"`img_embs_per_image` has dimension {imgs.shape[1]}, `cap_embs` {caps.shape[1]}"
    )
  a = caption_neighbours_t2t(caps, T2T_NEIGHBOURS).tolist()
  b = image_ranking_neighbours(imgs @ caps.T, I2T_NEIGHBOURS).tolist()
  return [_merge(ai, bi, DATASETS[dataset]) for ai, bi in zip(a, b, strict=True)]


def _padded_with_self(neighbours, n: int) -> np.ndarray:
  """``[n, W + 1]`` int64: each caption's neighbours, then itself as padding and last."""
  if isinstance(neighbours, np.ndarray) and not np.issubdtype(neighbours.dtype, np.integer):
    raise ValueError(f"`neighbours` must hold integers, got dtype {neighbours.dtype}")
  try:
    rows = [[operator.index(j) for j in r] for r in neighbours]
  except TypeError as e:
    raise ValueError("`neighbours` must be rows of integer caption indices") from e
  if len(rows) != n:
    raise ValueError(f"`neighbours` must have one row per caption ({n}), got {len(rows)}")
  width = max((len(r) for r in rows), default=0) + 1
  out = np.repeat(np.arange(n, dtype=np.int64)[:, None], width, axis=1)
  for i, r in enumerate(rows):
    out[i, : len(r)] = r
  if out.size and (out.min() < 0 or out.max() >= n):
    raise ValueError(f"`neighbours` must hold caption indices in [0, {n})")
  return out


def complete_labels(labels, neighbours) -> np.ndarray:
  """``l'_i = max(l_i, max_{j in N(i)} l_j)``, elementwise (``encode_data_KNN_rerank``).

  Every neighbour contributes its original label (one hop), the caption always
  contributes its own (the official code appends ``i`` to ``N(i)``), so ``l' >= l``;
  repeated neighbours change nothing. Unlike the official code the neighbour lists are
  not mutated, and ragged lists are accepted (see the module docstring).

  Args:
    labels: ``[Nc, C]`` concept labels of the captions (multi-hot or scores).
    neighbours: ``Nc`` lists of caption indices (ragged allowed) or an int
      ``[Nc, W]`` array, e.g. :func:`completion_neighbours`'s result.

  Returns:
    ``[Nc, C]`` completed labels, of ``labels``' dtype.
  """
  lab = np.asarray(labels)
  if lab.ndim != 2:
    raise ValueError(f"`labels` must be 2-D [Nc, C], got shape {lab.shape}")
  idx = _padded_with_self(neighbours, lab.shape[0])
  out = np.empty_like(lab)
  for lo in range(0, lab.shape[0], _CHUNK):
    out[lo : lo + _CHUNK] = lab[idx[lo : lo + _CHUNK]].max(axis=1)
  return out


def mixed_similarity(
  fused_img, fused_txt, cons_img, cons_txt, *, fused_weight: float = 0.95
) -> np.ndarray:
  """``d = w F_v F_t^T + (1 - w) C_v C_t^T`` (``i2t_sep_sim`` / ``t2i_sep_sim``).

  ``w = fused_weight`` (``evalrank`` passes 0.95; the functions' own default is 0.8);
  ``F`` fused and ``C`` consensus embeddings, images one row each (official
  ``img_embs[::5]`` and ``img_emb_cons[::5]``). The official ``i2t_sep_sim`` reshapes
  the consensus image row with the fused dimension, so it needs both dimensions equal;
  here they may differ. Rank it with :mod:`jitr.evaluation.ranks` (ties: lower index
  first; the official ``argsort(d)[::-1]`` puts the higher index first).

  Args:
    fused_img: ``[Ni, D]``; fused_txt: ``[Nc, D]``.
    cons_img: ``[Ni, D']``; cons_txt: ``[Nc, D']``.
    fused_weight: ``w``.

  Returns:
    ``[Ni, Nc]`` scores.
  """
  fi, ft = _matrix("fused_img", fused_img), _matrix("fused_txt", fused_txt)
  ci, ct = _matrix("cons_img", cons_img), _matrix("cons_txt", cons_txt)
  for name, x, rows, like in (
    ("cons_img", ci, fi.shape[0], "fused_img"),
    ("cons_txt", ct, ft.shape[0], "fused_txt"),
  ):
    if x.shape[0] != rows:
      raise ValueError(f"`{name}` has {x.shape[0]} rows, expected {rows} like `{like}`")
  if fi.shape[1] != ft.shape[1] or ci.shape[1] != ct.shape[1]:
    raise ValueError(
      f"embedding dimensions differ: fused {fi.shape[1]} vs {ft.shape[1]}, "
      f"consensus {ci.shape[1]} vs {ct.shape[1]}"
    )
  return fused_weight * (fi @ ft.T) + (1 - fused_weight) * (ci @ ct.T)
