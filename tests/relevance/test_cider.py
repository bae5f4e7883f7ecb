"""CIDEr-D: a hand-computed case, parity with pycocoevalcap, block scoring, top-K."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from jitr.relevance.cider import CiderD, cider_d
from jitr.relevance.cider_estimator import CiderEstimator
from jitr.relevance.estimator import select_top_k
from jitr.relevance.tokenize import ptb_tokenize


def test_hand_computed():
  # N = 2 reference sets, every n-gram has df = 1, so idf = log 2 for all (and for unseen ones).
  refs = [["a b"], ["c d"]]
  scorer = CiderD().fit(refs)
  # identical: cos_1 = cos_2 = 1, orders 3, 4 have zero norm -> 0; mean 0.5, x10
  assert scorer.score_pairs(["a b"], [refs[0]])[0] == pytest.approx(5.0, rel=1e-12)
  # "a b a b": cos_1 = 2/(sqrt8 sqrt2) = 0.5 (clipped), cos_2 = 1/sqrt5, length 3 vs 1
  expected = 10 * (0.5 + 1 / math.sqrt(5)) / 4 * math.exp(-(2**2) / (2 * 6.0**2))
  assert scorer.score_pairs(["a b a b"], [refs[0]])[0] == pytest.approx(expected, rel=1e-12)
  # no shared n-gram, and an empty candidate
  np.testing.assert_array_equal(scorer.score_pairs(["c d", ""], [refs[0], refs[0]]), [0.0, 0.0])


def test_equals_pycocoevalcap_on_real_flickr8k_pairs(flickr8k_captions, java):
  from pycocoevalcap.cider.cider import Cider
  from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

  cs = flickr8k_captions
  rng = random.Random(0)
  images = rng.sample(range(cs.num_images), 100)
  raw_refs = {k: cs.references(i) for k, i in enumerate(images)}
  # 3 candidates per image (300 pairs): its own first caption, a random caption, one of the
  # next image
  raw_cands = []
  for k, i in enumerate(images):
    raw_cands.append(
      [
        raw_refs[k][0],
        cs.captions[rng.randrange(cs.num_captions)],
        cs.captions[(i * 5 + 7) % cs.num_captions],
      ]
    )
  tok = PTBTokenizer()
  gts = tok.tokenize({k: [{"caption": c} for c in refs] for k, refs in raw_refs.items()})
  ours_refs = [[ptb_tokenize(c) for c in raw_refs[k]] for k in range(len(images))]
  assert ours_refs == [gts[k] for k in range(len(images))]
  for round_ in range(3):
    res = tok.tokenize({k: [{"caption": raw_cands[k][round_]}] for k in range(len(images))})
    _, reference = Cider().compute_score(gts, res)
    ours = cider_d([ptb_tokenize(raw_cands[k][round_]) for k in range(len(images))], ours_refs)
    np.testing.assert_allclose(ours, reference, rtol=1e-6, atol=1e-12)
    assert np.count_nonzero(reference) > 50  # informative pairs, not all zero


def test_blocks_equal_pairs_and_top_k(flickr8k_captions):
  cs = flickr8k_captions.subset(range(120))
  est = CiderEstimator().fit(cs)
  images = np.arange(cs.num_images)
  dense = est.image_scores(images)  # [120, 600]
  tokens = [ptb_tokenize(c) for c in cs.captions]
  refs = [tokens[cs.image_offsets[i] : cs.image_offsets[i + 1]] for i in images]
  scorer = CiderD().fit(refs)
  rng = np.random.default_rng(0)
  ii, jj = rng.integers(0, 120, 500), rng.integers(0, cs.num_captions, 500)
  pairs = scorer.score_pairs([tokens[j] for j in jj], [refs[i] for i in ii])
  np.testing.assert_allclose(dense[ii, jj], pairs, rtol=1e-12, atol=1e-14)
  # an image's own captions are its best matches here, and top-K is the sorted dense row
  top = est.top_k(images, 7, images_per_block=50)
  np.testing.assert_allclose(top.scores, -np.sort(-dense, axis=1)[:, :7], rtol=1e-6)
  np.testing.assert_allclose(np.take_along_axis(dense, top.indices, 1), top.scores, rtol=1e-6)
  assert np.all(dense >= 0) and np.all(dense <= 10)


def test_select_top_k_breaks_ties_by_index():
  scores = np.array([[0.5, 0.9, 0.5, 0.1, 0.5], [1.0, 1.0, 1.0, 1.0, 1.0]])
  top = select_top_k(scores, 3)
  np.testing.assert_array_equal(top.indices, [[1, 0, 2], [0, 1, 2]])
  np.testing.assert_allclose(top.scores, [[0.9, 0.5, 0.5], [1, 1, 1]])
  with pytest.raises(ValueError, match="top_k=6"):
    select_top_k(scores, 6)


def test_vectorized_ngrams_equal_the_python_loops(flickr8k_captions):
  cs = flickr8k_captions.subset(range(0, 8000, 20))
  tokens = [ptb_tokenize(c) for c in cs.captions]
  refs = [tokens[cs.image_offsets[i] : cs.image_offsets[i + 1]] for i in range(cs.num_images)]
  rng = np.random.default_rng(1)
  ii, jj = rng.integers(0, cs.num_images, 800), rng.integers(0, cs.num_captions, 800)
  cands = [tokens[j] for j in jj] + ["", "zebra zebra unseen words"]
  sets = [refs[i] for i in ii] + [refs[0], refs[1]]
  fast, slow = CiderD().fit(refs), CiderD(use_numpy=False).fit(refs)
  assert fast.vocabulary_size == slow.vocabulary_size
  np.testing.assert_allclose(
    fast.score_pairs(cands, sets), slow.score_pairs(cands, sets), rtol=1e-12, atol=1e-15
  )
  np.testing.assert_array_equal(fast.score_pairs(cands[-2:], sets[-2:]), [0.0, 0.0])
