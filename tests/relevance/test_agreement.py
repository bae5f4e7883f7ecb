"""Agreement with human judgments: file reading, the protocol, Kendall tau, and CIDEr-D's
published 24.6."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jitr.relevance.agreement import (
  JudgmentsFileError,
  build_protocol,
  kendall_tau,
  rank_ensemble,
  read_judgments,
  score_protocol,
)
from jitr.relevance.captions_io import read_flickr8k_tokens

TOKENS = """\
a.jpg#0\tA dog runs on grass .
a.jpg#1\tA brown dog outside .
a.jpg#2\tThe dog plays .
b.jpg#0\tA man rides a bike .
b.jpg#1\tA cyclist on a road .
b.jpg#2\tA man on a bicycle .
"""


@pytest.fixture()
def tiny(tmp_path):
  (tmp_path / "tokens.txt").write_text(TOKENS)
  return read_flickr8k_tokens(str(tmp_path / "tokens.txt")), tmp_path


def test_crowdflower_protocol_removes_own_references_for_all_judgments(tiny):
  caps, tmp = tiny
  path = tmp / "CrowdFlowerAnnotations.txt"
  path.write_text(
    "a.jpg\tb.jpg#0\t0\t0\t3\na.jpg\ta.jpg#1\t1\t3\t0\nb.jpg\ta.jpg#2\t0.333333\t1\t2\n"
  )
  j = read_judgments(str(path))
  assert j.fmt == "crowdflower" and j.tau_variant == "b"
  np.testing.assert_allclose(j.scores, [0.0, 1.0, 0.333333])
  p = build_protocol(j, caps)
  assert p.candidates == ["A man rides a bike .", "A brown dog outside .", "The dog plays ."]
  # a.jpg#1 was judged for a.jpg: it leaves a.jpg's references for both of a.jpg's judgments
  assert p.reference_sets[0] == p.reference_sets[1] == ["A dog runs on grass .", "The dog plays ."]
  assert p.reference_sets[2] == [
    "A man rides a bike .",
    "A cyclist on a road .",
    "A man on a bicycle .",
  ]


def test_expert_scores_mean_or_separate_and_own_pairs_skipped(tiny):
  caps, tmp = tiny
  path = tmp / "ExpertAnnotations.txt"
  path.write_text(
    "a.jpg\tb.jpg#1\t1\t2\t2\na.jpg\ta.jpg#0\t4\t4\t4\nb.jpg\tb.jpg#2\t4\t3\t4\nb.jpg\ta.jpg#0\t1\t1\t2\n"
  )
  j = read_judgments(str(path))
  assert j.fmt == "expert" and j.tau_variant == "c"
  np.testing.assert_allclose(j.scores, [5 / 3, 4.0, 11 / 3, 4 / 3])
  p = build_protocol(j, caps)  # pairs whose caption is a reference of the image are skipped
  assert p.candidates == ["A cyclist on a road .", "A dog runs on grass ."]
  np.testing.assert_allclose(p.human, [5 / 3, 4 / 3])
  assert len(p.reference_sets[0]) == 3
  sep = read_judgments(str(path), expert_scores="separate")
  np.testing.assert_allclose(sep.scores[:3], [1, 2, 2])


def test_bad_judgments_files(tiny):
  caps, tmp = tiny
  path = tmp / "CrowdFlowerAnnotations.txt"
  path.write_text("a.jpg\tb.jpg#0\t0\t0\t3\na.jpg\tb.jpg#1\tyes\t0\t3\n")
  with pytest.raises(
    JudgmentsFileError, match=r"CrowdFlowerAnnotations.txt:2: score columns must be numbers"
  ):
    read_judgments(str(path))
  path.write_text("a.jpg\tz.jpg#0\t0.5\t1\t1\n")
  with pytest.raises(JudgmentsFileError, match=r"caption id 'z.jpg#0' is not in"):
    build_protocol(read_judgments(str(path)), caps)
  other = tmp / "judgments.tsv"
  other.write_text("a.jpg\tb.jpg#0\t1\t1\t1\n")
  with pytest.raises(JudgmentsFileError, match="pass --judgments_format"):
    read_judgments(str(other))
  with pytest.raises(JudgmentsFileError, match=r"judgments.tsv:1: expert scores \[1.0, 1.0, 7.0\]"):
    other.write_text("a.jpg\tb.jpg#0\t1\t1\t7\n")
    read_judgments(str(other), fmt="expert")


def test_score_protocol_rows_come_from_the_settings_and_the_relevance_kind(tiny):
  """Rows by relevance kind: cider one (CIDEr-D), lsa one per aggregation (fitted on the
  corpus, built from the settings); the ensemble takes each estimator's own row."""
  from jitr.relevance.cider_estimator import CiderEstimator
  from jitr.relevance.lsa import LsaEstimator
  from jitr.relevance.registry import default_estimator_settings

  caps, tmp = tiny
  path = tmp / "CrowdFlowerAnnotations.txt"
  path.write_text(
    "a.jpg\tb.jpg#0\t0\t0\t3\na.jpg\ta.jpg#1\t1\t3\t0\nb.jpg\ta.jpg#2\t0.333333\t1\t2\n"
  )
  p = build_protocol(read_judgments(str(path)), caps)
  settings = default_estimator_settings()
  settings.lsa.k, settings.lsa.aggregate = 2, "mean"
  scores = score_protocol(p, caps, ["cider", "lsa"], settings=settings, log=lambda _: None)
  assert list(scores) == [
    "CIDEr-D", "lsa (max)", "lsa (mean)", "lsa (smooth max)", "cider + lsa (rank mean)"
  ]  # fmt: skip
  pairs = (p.candidates, p.reference_sets)
  np.testing.assert_allclose(scores["CIDEr-D"], CiderEstimator().pair_scores(*pairs))
  lsa = LsaEstimator(k=2).fit(caps)
  np.testing.assert_allclose(scores["lsa (mean)"], lsa.pair_scores(*pairs, aggregate="mean"))
  np.testing.assert_allclose(
    scores["cider + lsa (rank mean)"],
    rank_ensemble([scores["CIDEr-D"], scores["lsa (mean)"]]),  # lsa's own row: its aggregate
  )
  with pytest.raises(ValueError, match="estimator 'lsa': .*unexpected keyword argument 'kk'"):
    score_protocol(p, caps, ["lsa"], settings={"lsa": {"kk": 2}}, log=lambda _: None)


def test_kendall_tau_hand_computed():
  # 5 concordant pairs, 0 discordant, one tie in the human scores: tau-b = 5 / sqrt(6 * 5)
  assert kendall_tau(np.array([1, 2, 3, 4]), np.array([0, 0.5, 0.5, 1]), "b") == pytest.approx(
    5 / math.sqrt(30)
  )
  # tau-c = 2 m (C - D) / (n^2 (m - 1)), m = min(#x values, #y values) = 3
  assert kendall_tau(np.array([1, 2, 3, 4]), np.array([0, 0.5, 0.5, 1]), "c") == pytest.approx(
    2 * 3 * 5 / (16 * 2)
  )
  np.testing.assert_allclose(
    rank_ensemble([np.array([3.0, 1, 2]), np.array([1.0, 2, 3])]), [2 / 3, 1 / 2, 5 / 6]
  )


@pytest.mark.slow
def test_cider_d_reproduces_published_crowdflower_tau_b(flickr8k):
  """CLIPScore (Hessel et al. 2021, Table 2): CIDEr-D tau-b = 24.6 on Flickr8k-CrowdFlower."""
  from jitr.relevance.cider_estimator import CiderEstimator

  caps = read_flickr8k_tokens(str(flickr8k / "Flickr8k.token.txt"))
  p = build_protocol(read_judgments(str(flickr8k / "CrowdFlowerAnnotations.txt")), caps)
  assert len(p.candidates) == 47830
  tau = 100 * kendall_tau(
    CiderEstimator().pair_scores(p.candidates, p.reference_sets), p.human, "b"
  )
  assert tau == pytest.approx(24.6, abs=0.2)
