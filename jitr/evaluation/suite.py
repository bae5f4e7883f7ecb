"""The full metric set from a similarity matrix and ground truth.

:func:`evaluate_retrieval` is the single entry point used by training's
validation and by the ``jitr-eval`` app. For each direction (image-to-text:
image queries over captions; text-to-image: caption queries over images) it
makes one sweep over the score blocks, computing every requested metric from
the same block, and returns a flat ``{name: float}`` dict:

================================  ==========================================
key                               metric
================================  ==========================================
``full/{d}/R@K``                  Recall@K, whole gallery (COCO 5K protocol)
``full/{d}/medr``, ``meanr``      median / mean rank of the best positive
``full/rsum``, ``full/mR``        RSUM and M-Recall over ``recall_ks``
``folds/...``                     the same averaged over folds (COCO 1K)
``{name}/{d}/mAP@R``, ``R-P``     extended positive set ``name`` (ECCV ...)
``{name}/{d}/R@K``                Recall@K with extended positives
``ndcg/{d}/NDCG@K``               NDCG@K with graded relevance
``semantic/{d}/NCS@K``, ``SR@K``  NCS and Semantic Recall (SAM paper)
``class/{d}/mAP``, ``class/mAP``  MAP over class labels (CMAL^2R)
================================  ==========================================

``{d}`` is ``i2t`` or ``t2i``. Rates are in percent (``percent=True``) --
R@K 0..100, RSUM 0..600 -- ranks are 1-based.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jitr.evaluation import coco
from jitr.evaluation import recall as recall_lib
from jitr.evaluation.class_map import as_multihot
from jitr.evaluation.eccv import map_rows, summarize_extended
from jitr.evaluation.engine import SweepConfig, sweep
from jitr.evaluation.ndcg import summarize_ndcg
from jitr.evaluation.positives import PositiveSets, positives_from_owner
from jitr.evaluation.semantic import check_semantic_k, summarize_semantic
from jitr.evaluation.sources import DenseScores, EmbeddingScores, Scores, as_scores

__all__ = ["CrossModalScores", "evaluate_retrieval", "DIRECTIONS"]

DIRECTIONS = ("i2t", "t2i")


@dataclasses.dataclass(frozen=True)
class CrossModalScores:
  """An ``(images, captions)`` score matrix readable in both directions.

  ``i2t`` has the images as queries (``num_images x num_captions``), ``t2i``
  the captions (``num_captions x num_images``).
  """

  i2t: Scores
  t2i: Scores

  def __post_init__(self):
    if (self.i2t.num_queries, self.i2t.num_gallery) != (self.t2i.num_gallery, self.t2i.num_queries):
      raise ValueError(
        f"CrossModalScores: `i2t` is {self.i2t.num_queries} x "
        f"{self.i2t.num_gallery} but `t2i` is {self.t2i.num_queries} x "
        f"{self.t2i.num_gallery}; expected transposed shapes"
      )

  @property
  def num_images(self) -> int:
    return self.i2t.num_queries

  @property
  def num_captions(self) -> int:
    return self.i2t.num_gallery

  @classmethod
  def from_matrix(cls, matrix: Any) -> CrossModalScores:
    """From a dense ``(num_images, num_captions)`` array (numpy, memmap, jax)."""
    src = as_scores(matrix, name="sim")
    return cls(src, DenseScores(src.matrix, transpose=True))

  @classmethod
  def from_embeddings(cls, images: Any, captions: Any) -> CrossModalScores:
    """``s_ij = <image_i, caption_j>`` computed per block (bounded memory)."""
    src = EmbeddingScores(images, captions)
    return cls(src, src.transposed())

  def direction(self, name: str) -> Scores:
    return self.i2t if name == "i2t" else self.t2i


def _as_cross_modal(x: Any, name: str, shape: tuple[int, int] | None = None) -> CrossModalScores:
  if isinstance(x, CrossModalScores):
    out = x
  else:
    xs = getattr(x, "shape", None)
    if xs is None or len(xs) != 2:
      raise ValueError(
        f"`{name}` must be a 2-D (num_images, num_captions) array or a "
        f"CrossModalScores, got shape {xs}"
      )
    out = CrossModalScores.from_matrix(x)
  if shape is not None and (out.num_images, out.num_captions) != shape:
    raise ValueError(
      f"`{name}` is {out.num_images} x {out.num_captions}, expected "
      f"{shape[0]} x {shape[1]} like `sim`"
    )
  return out


def _check_ks(ks: Sequence[int], name: str) -> tuple[int, ...]:
  ks = tuple(sorted(set(int(k) for k in ks)))
  if not ks or ks[0] < 1:
    raise ValueError(f"`{name}` must be a non-empty list of integers >= 1, got {ks}")
  return ks


def evaluate_retrieval(
  sim: Any,
  *,
  caption_to_image: Any,
  folds: int | np.ndarray | None = None,
  extended_positives: Mapping[str, tuple[PositiveSets, PositiveSets]] | None = None,
  extended_map: bool | Sequence[str] = True,
  relevance: Any = None,
  semantic: Any = None,
  image_labels: Any = None,
  caption_labels: Any = None,
  recall_ks: Sequence[int] = (1, 5, 10),
  curve_ks: Sequence[int] = (1, 2, 3, 5, 10, 20, 50, 100),
  ndcg_ks: Sequence[int] = (1, 2, 3, 5, 10, 20, 50, 100),
  semantic_ks: Sequence[int] = (1, 5, 10),
  semantic_num_relevant: int = 1,
  class_map_k: int | None = None,
  directions: Sequence[str] = DIRECTIONS,
  percent: bool = True,
  chunk_size: int | None = None,
) -> dict[str, float]:
  """Computes the full metric set; see the module docstring for the keys.

  Args:
    sim: ``(num_images, num_captions)`` similarities (numpy / memmap / jax
      array) or a :class:`CrossModalScores` (e.g. ``from_embeddings`` for
      galleries too large to hold the matrix).
    caption_to_image: ``(num_captions,)`` index of each caption's image.
    folds: number of equal contiguous image folds, or ``(num_images,)`` fold
      ids; adds the ``folds/`` protocol (COCO 1K with 5 folds of the 5K test).
    extended_positives: ``{name: (i2t, t2i)}`` extended positive sets (ECCV
      Caption, CxC, ...): ``i2t`` over captions for each image, ``t2i`` over
      images for each caption (see :mod:`jitr.evaluation.positives`).
    extended_map: which extended sets also get mAP@R and R-Precision (True:
      all; a list of names; False: none -- Recall@K only).
    relevance: graded relevance ``(num_images, num_captions)`` (array or
      :class:`CrossModalScores`), for NDCG@K.
    semantic: semantic scores (same forms) for NCS / Semantic Recall; defaults
      to ``relevance`` when ``semantic_ks`` is non-empty and only ``relevance``
      is given.
    image_labels / caption_labels: class ids ``(n,)`` or memberships
      ``(n, C)`` for class MAP; captions default to their image's labels.
    recall_ks: cut-offs of RSUM / M-Recall (and always reported).
    curve_ks: extra Recall@K cut-offs for the recall curves.
    ndcg_ks: NDCG cut-offs.
    semantic_ks: NCS / SR cut-offs (empty: skip).
    semantic_num_relevant: ``N`` of Semantic Recall.
    class_map_k: truncate class AP to the top k (None: full ranking).
    directions: subset of ``("i2t", "t2i")``.
    percent: report rates in percent.
    chunk_size: queries per block (default: ~8 MB float32 blocks).

  Returns:
    A flat ``{key: float}`` dict.
  """
  scores = _as_cross_modal(sim, "sim")
  n_img, n_cap = scores.num_images, scores.num_captions
  owner = np.asarray(caption_to_image)
  if owner.shape != (n_cap,):
    raise ValueError(
      f"`caption_to_image` must have shape ({n_cap},) (one image "
      f"index per caption of `sim`), got {owner.shape}"
    )
  gt = dict(zip(DIRECTIONS, positives_from_owner(owner, num_images=n_img)))
  for d in directions:
    if d not in DIRECTIONS:
      raise ValueError(f"`directions` entries must be 'i2t' or 't2i', got {d!r}")
  recall_ks = _check_ks(recall_ks, "recall_ks")
  all_recall_ks = _check_ks(tuple(recall_ks) + tuple(curve_ks), "curve_ks")

  # Folds.
  fold_info = None
  if folds is not None:
    fold_ids = (
      coco.contiguous_folds(n_img, int(folds)) if np.ndim(folds) == 0 else np.asarray(folds)
    )
    if fold_ids.shape != (n_img,):
      raise ValueError(f"`folds` must be an int or ({n_img},) fold ids, got shape {fold_ids.shape}")
    _, gi, qi, gt_, qt = coco.fold_layout(fold_ids, owner)
    fold_info = {"i2t": (gi, qi), "t2i": (gt_, qt)}

  # Extended positives.
  ext_names = list(extended_positives or {})
  for name in ext_names:
    pair = extended_positives[name]
    if len(pair) != 2:
      raise ValueError(f"`extended_positives[{name!r}]` must be an (i2t, t2i) pair")
    for d, ps in zip(DIRECTIONS, pair):
      want = (n_img, n_cap) if d == "i2t" else (n_cap, n_img)
      if not isinstance(ps, PositiveSets) or (ps.num_queries, ps.num_gallery) != want:
        raise ValueError(
          f"`extended_positives[{name!r}]` {d} must be PositiveSets over "
          f"{want[0]} queries x {want[1]} gallery items"
        )

  if isinstance(extended_map, bool):
    map_names = ext_names if extended_map else []
  else:
    map_names = list(extended_map)
    for name in map_names:
      if name not in ext_names:
        raise ValueError(
          f"`extended_map` names {name!r}, which is not a key of `extended_positives` {ext_names}"
        )

  # Relevance / semantic.
  rel = _as_cross_modal(relevance, "relevance", (n_img, n_cap)) if relevance is not None else None
  ndcg_ks = _check_ks(ndcg_ks, "ndcg_ks") if rel is not None and ndcg_ks else ()
  sem_src = semantic if semantic is not None else relevance
  sem = None
  semantic_ks = tuple(semantic_ks or ())
  if sem_src is not None and semantic_ks:
    sem = rel if semantic is None else _as_cross_modal(semantic, "semantic", (n_img, n_cap))
    semantic_ks = _check_ks(semantic_ks, "semantic_ks")
  else:
    semantic_ks = ()

  # Class labels.
  labels = None
  if image_labels is not None:
    il = np.asarray(image_labels)
    if il.ndim not in (1, 2) or il.shape[0] != n_img:
      raise ValueError(
        f"`image_labels` must have {n_img} rows (one per image), got shape {il.shape}"
      )
    cl = il[owner] if caption_labels is None else np.asarray(caption_labels)
    c = None
    if il.ndim == 1 and cl.ndim == 1:
      c = int(max(il.max(initial=0), cl.max(initial=0))) + 1
    il = as_multihot(il, num_classes=c, name="image_labels")
    cl = as_multihot(cl, num_classes=il.shape[1], name="caption_labels")
    if il.shape[0] != n_img or cl.shape[0] != n_cap:
      raise ValueError(
        f"`image_labels` / `caption_labels` must have {n_img} / {n_cap} "
        f"rows, got {il.shape[0]} / {cl.shape[0]}"
      )
    labels = {"i2t": (il, cl), "t2i": (cl, il)}
  elif caption_labels is not None:
    raise ValueError("`caption_labels` needs `image_labels`")

  scale = 100.0 if percent else 1.0
  out: dict[str, float] = {}
  recalls: dict[str, dict[str, dict[int, float]]] = {"full": {}, "folds": {}}
  for d in directions:
    src = scores.direction(d)
    g = src.num_gallery
    ext = [extended_positives[n][DIRECTIONS.index(d)] for n in ext_names]
    ndcg_k = min(max(ndcg_ks), g) if ndcg_ks else 0
    sem_k = max(semantic_ks) if semantic_ks else 0
    if sem_k:
      check_semantic_k(sem_k, semantic_num_relevant, gt[d], g)
    cfg = SweepConfig(
      with_groups=fold_info is not None,
      num_extended=len(ext),
      topk=ndcg_k,
      ndcg_k=ndcg_k,
      semantic_k=sem_k,
      semantic_n=int(semantic_num_relevant),
    )
    groups, gq = fold_info[d] if fold_info else (None, None)
    res = sweep(
      src,
      gt[d],
      cfg=cfg,
      groups=groups,
      group_of_query=gq,
      extended=ext,
      relevance=rel.direction(d) if rel is not None else None,
      semantic=sem.direction(d) if sem is not None else None,
      query_labels=labels[d][0] if labels else None,
      gallery_labels=labels[d][1] if labels else None,
      class_map_k=class_map_k,
      chunk_size=chunk_size,
    )

    map_sets = tuple(ext_names.index(n) for n in map_names)
    if map_sets:
      max_r = max(int(ext[i].num_positives.max(initial=0)) for i in map_sets)
      mcfg = SweepConfig(map_sets=map_sets, topk=min(max(max_r, 1), g), with_gt=False)
      res.update(
        sweep(
          src,
          gt[d],
          cfg=mcfg,
          extended=ext,
          query_rows=map_rows([ext[i] for i in map_sets]),
          chunk_size=chunk_size,
        )
      )

    rk = res["rank"]
    full = recall_lib.recall_at_k(rk, all_recall_ks)
    recalls["full"][d] = full
    for k, v in full.items():
      out[f"full/{d}/R@{k}"] = scale * v
    out[f"full/{d}/medr"] = recall_lib.median_rank(rk)
    out[f"full/{d}/meanr"] = recall_lib.mean_rank(rk)
    if fold_info:
      gr = res["group_rank"]
      fold = {
        k: coco.fold_average(gr, gq, lambda r, k=k: recall_lib.recall_at_k(r, [k])[k])
        for k in all_recall_ks
      }
      recalls["folds"][d] = fold
      for k, v in fold.items():
        out[f"folds/{d}/R@{k}"] = scale * v
      out[f"folds/{d}/medr"] = coco.fold_average(gr, gq, recall_lib.median_rank)
      out[f"folds/{d}/meanr"] = coco.fold_average(gr, gq, recall_lib.mean_rank)
    for i, name in enumerate(ext_names):
      vals = summarize_extended(
        res[f"ext{i}_rank"], res.get(f"ext{i}_hits"), ext[i].num_positives, all_recall_ks
      )
      for key, v in vals.items():
        out[f"{name}/{d}/{key}"] = scale * v
    if ndcg_k:
      for key, v in summarize_ndcg(res["dcg"], res["idcg"], ndcg_ks).items():
        out[f"ndcg/{d}/{key}"] = scale * v
    if sem_k:
      for key, v in summarize_semantic(
        res["ncs_num"], res["ncs_den"], res["sr_hit"], semantic_ks
      ).items():
        out[f"semantic/{d}/{key}"] = scale * v
    if labels:
      valid = res["class_valid"]
      out[f"class/{d}/mAP"] = scale * (
        float(np.mean(res["class_ap"][valid])) if valid.any() else float("nan")
      )

  if set(directions) == set(DIRECTIONS):
    for proto in ("full", "folds"):
      if recalls[proto]:
        rs = recall_lib.rsum(recalls[proto]["i2t"], recalls[proto]["t2i"], recall_ks)
        out[f"{proto}/rsum"] = scale * rs
        out[f"{proto}/mR"] = scale * rs / (2 * len(recall_ks))
    if labels:
      out["class/mAP"] = 0.5 * (out["class/i2t/mAP"] + out["class/t2i/mAP"])
  return out
