"""Exact graded relevance of a ``jitr_shapes`` caption to a scene (numpy only).

For a scene with objects ``o_1..o_n`` and a caption stating mentions
``m_1..m_M``, an optional relation ``(a, rel, b)`` and an optional count ``c``:

* ``match(m, o)`` = fraction of the attributes stated by ``m`` (shape, colour,
  size, row, col) that ``o`` has; 1 if ``m`` states none; 0 for no object.
* The mentions are assigned to *distinct* objects (an injective map ``σ``; a
  mention left without an object when ``M > n`` scores 0), and the relation
  scores 1 if it holds between ``σ(a)`` and ``σ(b)`` (left_of: ``col_σ(a) <
  col_σ(b)``, right_of ``>``, above: ``row_σ(a) < row_σ(b)``, below ``>``)::

      best = max_σ [ Σ_m match(m, σ(m)) + 1[rel holds under σ] ]

* ``count_score = max(0, 1 − |c − n| / 2)``.
* ``relevance = (best + count_score) / (M + 1[relation stated] + 1[count stated])``.

It lies in [0, 1] and equals 1 exactly when every stated fact is true of the
scene, in particular for the scene's own captions. :func:`relevance` is the
readable reference; :func:`relevance_matrix` computes all images × captions of a
split (vectorised: one matmul of attribute one-hots, then the 6 assignments).
"""

from __future__ import annotations

import itertools

import numpy as np

from jitr.data.shapes import captions as shapes_captions
from jitr.data.shapes import scene as shapes_scene


def attribute_match(mention: shapes_captions.Mention, obj: shapes_scene.SceneObject) -> float:
  """Fraction of the stated attributes of ``mention`` that ``obj`` has (1 if none)."""
  pairs = [(m, o) for m, o in zip(mention.attributes(), obj.attributes()) if m >= 0]
  if not pairs:
    return 1.0
  return sum(m == o for m, o in pairs) / len(pairs)


def relation_holds(relation: int, a: shapes_scene.SceneObject, b: shapes_scene.SceneObject) -> bool:
  """Whether ``a <relation> b`` on the grid (strict inequality of col or row)."""
  if relation == shapes_captions.LEFT_OF:
    return a.col < b.col
  if relation == shapes_captions.RIGHT_OF:
    return a.col > b.col
  if relation == shapes_captions.ABOVE:
    return a.row < b.row
  if relation == shapes_captions.BELOW:
    return a.row > b.row
  raise ValueError(f"relation_holds: unknown relation {relation}")


def count_score(stated: int, actual: int) -> float:
  """``max(0, 1 − |stated − actual| / 2)``."""
  return max(0.0, 1.0 - abs(stated - actual) / 2.0)


def relevance(scene: shapes_scene.Scene, facts: shapes_captions.CaptionFacts) -> float:
  """Exact relevance of a caption's facts to a scene (module docstring formula)."""
  objs: list[shapes_scene.SceneObject | None] = list(scene.objects)
  objs += [None] * (shapes_scene.MAX_OBJECTS - len(objs))
  num_m = len(facts.mentions)
  best = 0.0
  for perm in itertools.permutations(range(shapes_scene.MAX_OBJECTS), num_m):
    total = 0.0
    for m, slot in zip(facts.mentions, perm):
      if objs[slot] is not None:
        total += attribute_match(m, objs[slot])
    if facts.relation is not None:
      a, rel, b = facts.relation
      oa, ob = objs[perm[a]], objs[perm[b]]
      if oa is not None and ob is not None and relation_holds(rel, oa, ob):
        total += 1.0
    best = max(best, total)
  denom = num_m + (facts.relation is not None)
  if facts.count >= 0:
    best += count_score(facts.count, len(scene.objects))
    denom += 1
  return best / denom


# ----------------------------------------------------------------------------
# Vectorised version on packed arrays.

_OFFSETS = np.cumsum((0,) + shapes_scene.ATTRIBUTE_CARDINALITY)  # one-hot block starts
_ONEHOT_DIM = int(_OFFSETS[-1]) + 1  # + one "any object" dimension


def _object_codes(scenes: np.ndarray) -> np.ndarray:
  """``[N, MAX_OBJECTS, D]`` float32: attribute one-hots + 1 for a real object."""
  n = scenes.shape[0]
  out = np.zeros((n, shapes_scene.MAX_OBJECTS, _ONEHOT_DIM), np.float32)
  valid = scenes[..., shapes_scene.SHAPE] >= 0
  for k in range(shapes_scene.NUM_ATTRIBUTES):
    idx = _OFFSETS[k] + np.where(valid, scenes[..., k], 0)
    np.put_along_axis(out, idx[..., None], valid[..., None].astype(np.float32), axis=-1)
  out[..., -1] = valid
  return out


def _mention_codes(facts: np.ndarray) -> np.ndarray:
  """``[C, MAX_MENTIONS, D]`` float32 so that ``object_code · mention_code = match``:
  one-hot of each stated attribute divided by the number stated, or the
  "any object" unit when nothing is stated; zeros for absent mentions."""
  num = facts.shape[0]
  attrs = facts[:, : shapes_captions.MAX_MENTIONS * shapes_scene.NUM_ATTRIBUTES].reshape(
    num, shapes_captions.MAX_MENTIONS, shapes_scene.NUM_ATTRIBUTES
  )
  n_mentions = facts[:, shapes_captions.MAX_MENTIONS * shapes_scene.NUM_ATTRIBUTES]
  present = np.arange(shapes_captions.MAX_MENTIONS)[None, :] < n_mentions[:, None]
  stated = (attrs >= 0) & present[..., None]
  n_stated = stated.sum(-1)
  out = np.zeros((num, shapes_captions.MAX_MENTIONS, _ONEHOT_DIM), np.float32)
  weight = np.where(n_stated > 0, 1.0 / np.maximum(n_stated, 1), 0.0).astype(np.float32)
  for k in range(shapes_scene.NUM_ATTRIBUTES):
    idx = _OFFSETS[k] + np.where(stated[..., k], attrs[..., k], 0)
    val = np.where(stated[..., k], weight, 0.0).astype(np.float32)
    np.put_along_axis(out, idx[..., None], val[..., None], axis=-1)
  out[..., -1] = present & (n_stated == 0)
  return out


def _relation_table(scenes: np.ndarray) -> np.ndarray:
  """``[N, 4 * MAX_OBJECTS**2]`` float32: ``rel * 9 + i * 3 + j`` -> 1 if
  objects i and j exist, differ and ``i <rel> j``."""
  valid = scenes[..., shapes_scene.SHAPE] >= 0
  row, col = scenes[..., shapes_scene.ROW], scenes[..., shapes_scene.COL]
  both = valid[:, :, None] & valid[:, None, :]
  table = (
    np.stack(
      [
        col[:, :, None] < col[:, None, :],
        col[:, :, None] > col[:, None, :],
        row[:, :, None] < row[:, None, :],
        row[:, :, None] > row[:, None, :],
      ],
      axis=1,
    )
    & both[:, None]
  )
  return table.reshape(scenes.shape[0], -1).astype(np.float32)


def check_scenes(scenes: np.ndarray) -> np.ndarray:
  scenes = np.asarray(scenes)
  if scenes.ndim != 3 or scenes.shape[1:] != (shapes_scene.MAX_OBJECTS, shapes_scene.OBJECT_FIELDS):
    raise ValueError(
      f"scenes: expected shape [N, {shapes_scene.MAX_OBJECTS}, {shapes_scene.OBJECT_FIELDS}], "
      f"got {scenes.shape}"
    )
  return scenes.astype(np.int64)


def check_facts(facts: np.ndarray) -> np.ndarray:
  facts = np.asarray(facts)
  if facts.ndim != 2 or facts.shape[1] != shapes_captions.FACT_FIELDS:
    raise ValueError(f"facts: expected shape [C, {shapes_captions.FACT_FIELDS}], got {facts.shape}")
  return facts.astype(np.int64)


def relevance_matrix(scenes: np.ndarray, facts: np.ndarray, *, chunk_size: int = 256) -> np.ndarray:
  """Relevance of every caption to every scene: float32 ``[N_img, N_cap]``.

  Args:
    scenes: int ``[N_img, MAX_OBJECTS, OBJECT_FIELDS]`` packed scenes.
    facts: int ``[N_cap, FACT_FIELDS]`` packed caption facts.
    chunk_size: images per chunk (bounds memory to ~``chunk·N_cap·36`` bytes).

  Equals :func:`relevance` entry by entry (tested).
  """
  scenes, facts = check_scenes(scenes), check_facts(facts)
  n_img, n_cap = scenes.shape[0], facts.shape[0]
  base = shapes_captions.MAX_MENTIONS * shapes_scene.NUM_ATTRIBUTES
  n_mentions = facts[:, base]
  count = facts[:, base + 1]
  subj, rel, obj = facts[:, base + 2], facts[:, base + 3], facts[:, base + 4]
  has_rel = subj >= 0
  mention_codes = _mention_codes(facts).reshape(n_cap * shapes_captions.MAX_MENTIONS, -1)
  perms = list(itertools.permutations(range(shapes_scene.MAX_OBJECTS)))
  out = np.empty((n_img, n_cap), np.float32)
  for start in range(0, n_img, chunk_size):
    sc = scenes[start : start + chunk_size]
    n = sc.shape[0]
    obj_codes = _object_codes(sc).reshape(n * shapes_scene.MAX_OBJECTS, -1)
    # match[i, o, c, m]
    match = (obj_codes @ mention_codes.T).reshape(
      n, shapes_scene.MAX_OBJECTS, n_cap, shapes_captions.MAX_MENTIONS
    )
    table = _relation_table(sc)
    best = np.zeros((n, n_cap), np.float32)
    for p in perms:
      p = np.asarray(p)
      total = sum(match[:, p[m], :, m] for m in range(shapes_captions.MAX_MENTIONS))
      idx = (
        np.where(has_rel, rel, 0) * shapes_scene.MAX_OBJECTS**2
        + p[np.where(has_rel, subj, 0)] * shapes_scene.MAX_OBJECTS
        + p[np.where(has_rel, obj, 0)]
      )
      total = total + table[:, idx] * has_rel[None, :]
      np.maximum(best, total, out=best)
    n_obj = (sc[..., shapes_scene.SHAPE] >= 0).sum(-1)
    cs = np.maximum(0.0, 1.0 - np.abs(count[None, :] - n_obj[:, None]) / 2.0)
    best = best + np.where(count[None, :] >= 0, cs, 0.0)
    denom = n_mentions + has_rel + (count >= 0)
    out[start : start + n] = best / denom[None, :]
  return out
