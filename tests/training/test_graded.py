"""Graded sources against matrices computed by hand (cosines of 2-D vectors at 0/90/180 degrees)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr.data.batch_keys import teacher_keys, topk_keys, vectors_keys
from jitr.training.graded import (
  COMBINERS,
  CONSTANT_RELEVANCE,
  SOURCES,
  CombinedSource,
  GradedSource,
  make_graded_fn,
  parse_source,
)

# Captions c0=(1,0), c1=(0,1), c2=(-1,0); references: image 0 {(1,0),(0,1)}, image 1
# {(0,1),(0,2)} (not unit: cosines normalise), image 2 {(-1,0),(1,0)}.
CAPS = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], np.float32)
REFS = np.array([[[1, 0], [0, 1]], [[0, 1], [0, 2]], [[-1, 0], [1, 0]]], np.float32)
# cos(ref_ik, cap_j) per (i, j): image 0 -> c0 [1, 0], c1 [0, 1], c2 [-1, 0]; image 1 ->
# c0 [0, 0], c1 [1, 1], c2 [0, 0]; image 2 -> c0 [-1, 1], c1 [0, 0], c2 [1, -1].
MAX_COS = [[1, 1, 0], [0, 1, 0], [1, 0, 1]]
MEAN_COS = [[0.5, 0.5, -0.5], [0, 1, 0], [0, 0, 0]]
POSITIVES = np.eye(3, dtype=bool)
# A teacher's embeddings (not unit: the relevance normalises): images e0=(1,0), e1=(0,3),
# e2=(1,1); captions t0=(1,0), t1=(0,1), t2=(-1,0). cos(e_i, t_j):
# e0 -> [1, 0, -1]; e1 -> [0, 1, 0]; e2 -> [s, s, -s] with s = 1/sqrt(2).
TEACHER = "runs/vse:2"  # a workdir may hold ':' and '/'
TEACHER_IMAGES = np.array([[1.0, 0.0], [0.0, 3.0], [1.0, 1.0]], np.float32)
TEACHER_CAPTIONS = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], np.float32)
S = 0.5**0.5
# (1 + cos)/2 with the diagonal (positives) 1
TEACHER_RELEVANCE = [[1, 0.5, 0], [0.5, 1, 0.5], [(1 + S) / 2, (1 + S) / 2, 1]]


def _batch():
  batch = {
    "caption_indices": jnp.array([7, 8, 9]),
    "oracle_relevance": jnp.array([[0.2, 0.4, 0.6], [0.1, 0.3, 0.5], [0.0, 0.9, 0.8]]),
  }
  for name in ("lsa", "sentence"):
    batch.update(zip(vectors_keys(name), (jnp.asarray(CAPS), jnp.asarray(REFS))))
  topk = (jnp.array([[7, 8], [8, -1], [9, 7]]), jnp.array([[6.0, 2.0], [5.0, 9.0], [4.0, 3.0]]))
  batch.update(zip(topk_keys("cider"), topk))  # indices -1: padding
  batch.update(zip(teacher_keys(TEACHER), map(jnp.asarray, (TEACHER_IMAGES, TEACHER_CAPTIONS))))
  return batch


def test_every_source_by_hand_with_max_aggregate():
  spec = {"r": "vectors:lsa", "s": "cosine:lsa", "c": "topk:cider", "o": "oracle", "k": "constant"}
  batch = _batch()
  out = make_graded_fn(spec, aggregates={"lsa": "max"})(batch, batch, jnp.asarray(POSITIVES))
  # the uninformed baseline: 0.5 everywhere, positives 1
  assert CONSTANT_RELEVANCE == 0.5
  np.testing.assert_allclose(out["k"], np.where(POSITIVES, 1.0, 0.5), atol=0)
  # (1 + max cos) / 2, positives (the diagonal) 1
  np.testing.assert_allclose(out["r"], [[1, 1, 0.5], [0.5, 1, 0.5], [1, 0.5, 1]], atol=1e-6)
  np.testing.assert_allclose(out["s"], MAX_COS, atol=1e-6)  # raw max cosine, in [-1, 1]
  # raw CIDEr where the caption is in the image's list, 0 elsewhere (padding never matches)
  np.testing.assert_allclose(out["c"], [[6, 2, 0], [0, 5, 0], [3, 0, 4]], atol=1e-6)
  np.testing.assert_allclose(out["o"], [[1, 0.4, 0.6], [0.1, 1, 0.5], [0, 0.9, 1]], atol=1e-6)


def test_mean_aggregate_is_honoured_per_estimator():
  spec = {"r": "vectors:lsa", "s": "cosine:lsa", "rs": "vectors:sentence"}
  fn = make_graded_fn(spec, aggregates={"lsa": "mean", "sentence": "max"})
  out = jax.jit(fn)(_batch(), _batch(), jnp.asarray(POSITIVES))
  # (1 + mean cos) / 2 = [[.75, .75, .25], [.5, 1, .5], [.5, .5, .5]], diagonal 1
  np.testing.assert_allclose(out["r"], [[1, 0.75, 0.25], [0.5, 1, 0.5], [0.5, 0.5, 1]], atol=1e-6)
  np.testing.assert_allclose(out["s"], MEAN_COS, atol=1e-6)
  np.testing.assert_allclose(out["rs"], [[1, 1, 0.5], [0.5, 1, 0.5], [1, 0.5, 1]], atol=1e-6)


def _rows(batch, picked):
  """The pair rows ``picked`` of a batch, with their global positions (``pair_index``)."""
  picked = np.asarray(picked)
  return {**{k: v[picked] for k, v in batch.items()}, "pair_index": jnp.asarray(picked)}


def test_rectangular_blocks_are_the_rows_and_columns_of_the_in_batch_matrix():
  """A device's images against all captions, and all images against its captions, are
  exactly the rows and columns of the full matrix (every source, the oracle included)."""
  spec = {
    "r": "vectors:lsa",
    "s": "cosine:lsa",
    "c": "topk:cider",
    "o": "oracle",
    "k": "constant",
    "t": f"teacher:{TEACHER}",
    "h": f"hmean:vectors:lsa|teacher:{TEACHER}|oracle",
  }
  fn = make_graded_fn(spec, aggregates={"lsa": "max"})
  batch, mine = _batch(), [2, 0]
  every = {**batch, "pair_index": jnp.arange(3)}
  full = fn(batch, batch, jnp.asarray(POSITIVES))
  rows = fn(_rows(batch, mine), every, jnp.asarray(POSITIVES[mine]))
  cols = fn(every, _rows(batch, mine), jnp.asarray(POSITIVES[:, mine]))
  for name in spec:
    np.testing.assert_allclose(rows[name], np.asarray(full[name])[mine], atol=1e-6)
    np.testing.assert_allclose(cols[name], np.asarray(full[name])[:, mine], atol=1e-6)


def test_a_vectors_source_needs_its_aggregate():
  with pytest.raises(ValueError, match=r"aggregates\['lsa'\] is None"):
    make_graded_fn({"r": "vectors:lsa"})
  with pytest.raises(ValueError, match=r"aggregates\['lsa'\] is 'median'"):
    make_graded_fn({"s": "cosine:lsa"}, aggregates={"lsa": "median"})
  make_graded_fn({"c": "topk:cider", "o": "oracle"})  # no vectors: nothing to aggregate


def test_sources_parse_in_one_place():
  assert parse_source("topk:cider") == GradedSource("topk", "cider")
  assert parse_source("vectors:sentence").stored == "vectors"
  assert parse_source("cosine:lsa").stored == "vectors"
  assert parse_source("oracle") == ("oracle", None) and parse_source("oracle").stored is None
  assert parse_source("constant") == ("constant", None) and parse_source("constant").stored is None
  assert sorted(SOURCES) == [
    "constant", "cosine", "coverage", "labels", "oracle", "teacher", "topk", "vectors"
  ]  # fmt: skip
  assert parse_source("labels") == ("labels", None) and parse_source("labels").stored is None
  assert parse_source("coverage:tokens").stored == "vectors"
  assert sorted(COMBINERS) == ["hmean", "mean"]
  assert parse_source("teacher:/a/b:c") == GradedSource("teacher", "/a/b:c")
  assert parse_source("teacher:/a/b").stored == "teacher"
  both = parse_source("hmean:vectors:sentence|teacher:/w/x:1")
  assert both == CombinedSource(
    "hmean", (GradedSource("vectors", "sentence"), GradedSource("teacher", "/w/x:1"))
  )
  assert both.leaves() == both.parts and parse_source("oracle").leaves() == (("oracle", None),)
  for spec in ("oracle", "vectors:lsa", "teacher:/w/x:1", "mean:oracle|topk:cider|teacher:a"):
    assert parse_source(spec).spec() == spec
  for bad in (
    "cider",
    "vectors:",
    "bm25:x",
    "oracle:x",
    "constant:x",
    "",
    "teacher:",
    "hmean:oracle",
  ):
    with pytest.raises(ValueError, match="graded source"):
      parse_source(bad)
  for bad in ("hmean:oracle|", "mean:oracle|bm25:x", "hmean:oracle|hmean:oracle|oracle"):
    with pytest.raises(ValueError, match="graded source"):  # no empty, unknown or nested parts
      parse_source(bad)


def test_teacher_relevance_by_hand():
  out = make_graded_fn({"t": f"teacher:{TEACHER}"})(_batch(), _batch(), jnp.asarray(POSITIVES))
  np.testing.assert_allclose(out["t"], TEACHER_RELEVANCE, atol=1e-6)


def test_harmonic_and_arithmetic_mean_by_hand():
  """hmean(a, b) = 2ab/(a+b) of the lsa RSC and the teacher relevance; positives stay 1."""
  spec = {
    "h": f"hmean:vectors:lsa|teacher:{TEACHER}",
    "m": f"mean:vectors:lsa|teacher:{TEACHER}",
  }
  out = make_graded_fn(spec, aggregates={"lsa": "max"})(_batch(), _batch(), jnp.asarray(POSITIVES))
  # RSC (max) [[1, 1, .5], [.5, 1, .5], [1, .5, 1]] with the teacher's [[1, .5, 0], ...]:
  # (0,1): 2*1*.5/1.5 = 2/3; (0,2): a zero -> 0; (1,0), (1,2): .5; (2,0): 2t/(1+t),
  # (2,1): 2*.5*t/(.5+t) with t = (1 + s)/2.
  t = (1 + S) / 2
  hmean = [[1, 2 / 3, 0], [0.5, 1, 0.5], [2 * t / (1 + t), t / (0.5 + t), 1]]
  np.testing.assert_allclose(out["h"], hmean, atol=1e-6)
  mean = [[1, 0.75, 0.25], [0.5, 1, 0.5], [(1 + t) / 2, (0.5 + t) / 2, 1]]
  np.testing.assert_allclose(out["m"], mean, atol=1e-6)
  for values in out.values():
    assert np.all((np.asarray(values) >= 0) & (np.asarray(values) <= 1))


def test_a_combination_checks_the_aggregates_of_its_parts():
  with pytest.raises(ValueError, match=r"aggregates\['lsa'\] is None"):
    make_graded_fn({"h": f"hmean:vectors:lsa|teacher:{TEACHER}"})


def test_token_coverage_relevance_by_hand():
  """coverage:tokens reads [m ; h] vectors (C = 2): cover_i = max over image i's references
  of m; r_ij = clip(h_j . cover_i, 0, 1); positives 1. References: image 0 m (1, 0.2) and
  (0.3, 0.4) -> cover (1, 0.4); image 1 m (0.1, 0.9) twice -> (0.1, 0.9). Captions' h:
  (1, 0), (0.5, 0.5)."""
  refs = np.array(
    [[[1, 0.2, 1, 0], [0.3, 0.4, 0, 1]], [[0.1, 0.9, 0, 1], [0.1, 0.9, 0, 1]]], np.float32
  )
  caps = np.array([[0.7, 0.7, 1, 0], [0.2, 0.6, 0.5, 0.5]], np.float32)
  caption_key, references_key = vectors_keys("tokens")
  batch = {references_key: jnp.asarray(refs), caption_key: caps}
  positives = jnp.array([[False, False], [False, True]])
  out = make_graded_fn({"r": "coverage:tokens"}, aggregates={"tokens": "max"})(
    batch, batch, positives
  )
  np.testing.assert_allclose(out["r"], [[1.0, 0.7], [0.1, 1.0]], atol=1e-6)
