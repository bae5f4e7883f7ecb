"""jitr-relevance-quality --eccv_captions: a source's ranking of COCO's 5K test split
against ECCV Caption's positives. The pairwise annotation (``constant``: the annotated
pairs first, the rest in index order) needs only the split's layout, so its four numbers
are checked on stand-in captions against a plain one-query-at-a-time mAP@R and R-P, and
against Listwise ITR's printed Table I row."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jitr.evaluation.eccv_caption_sets import eccv_positives
from jitr.papers import TABLES

REPO = Path(__file__).resolve().parents[2]


def _plain(order_of, positives) -> tuple[float, float]:
  """mAP@R and R-P of the rankings ``order_of(q)``, over the queries with positives."""
  aps, rps = [], []
  for q in np.flatnonzero(positives.has_positive):
    wanted = set(positives.indices[q][positives.indices[q] >= 0].tolist())
    r = int(positives.num_positives[q])
    hits = np.isin(order_of(q)[:r], list(wanted))
    precision = np.cumsum(hits) / np.arange(1, r + 1)
    aps.append(float(np.sum(precision * hits) / r))
    rps.append(float(hits.sum() / r))
  return float(np.mean(aps)), float(np.mean(rps))


@pytest.mark.slow  # a process scoring 5,000 x 25,000 pairs twice (about 40 s)
def test_the_pairwise_annotation_ranks_as_the_paper_prints(tmp_path):
  rng = np.random.default_rng(0)
  words = ("a", "dog", "man", "red", "runs", "on", "grass", "street")
  caps = tmp_path / "testall_caps.txt"
  caps.write_text("\n".join(" ".join(rng.choice(words, 5)) for _ in range(25000)) + "\n")
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  exe = Path(sys.executable).with_name("jitr-relevance-quality")
  args = [str(exe), f"--eccv_captions={caps}", "--estimators=constant", "--noprogress"]
  done = subprocess.run(
    [*args, f"--output={tmp_path / 'eccv.json'}"], env=env, capture_output=True, text=True
  )
  assert done.returncode == 0, done.stderr[-3000:]
  (row,) = json.loads((tmp_path / "eccv.json").read_text())["rows"]
  owner = np.repeat(np.arange(5000), 5)
  i2t, t2i = eccv_positives(owner)
  captions, images = np.arange(25000), np.arange(5000)

  def i2t_order(i):
    own = owner == i
    return np.concatenate([captions[own], captions[~own]])

  def t2i_order(j):
    return np.concatenate([[owner[j]], images[images != owner[j]]])

  for d, order_of, positives in (("i2t", i2t_order, i2t), ("t2i", t2i_order, t2i)):
    want = _plain(order_of, positives)
    assert (row[f"{d}/mAP@R"], row[f"{d}/R-P"]) == pytest.approx(want, abs=1e-9), d
  printed = TABLES["listwise.table1.eccv"].rows[0].values
  for key, value in row.items():
    if key != "estimator":  # jitr's ties in index order: within 0.06 of the printed row
      assert abs(100 * value - printed[key]) < 0.06, (key, value)
  assert "| constant | 31.32 | 31.37 | 13.60 | 13.62 |" in done.stdout


def test_another_caption_file_is_refused_in_one_line(tmp_path):
  caps = tmp_path / "test_caps.txt"
  caps.write_text("a dog\n" * 50)
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  exe = Path(sys.executable).with_name("jitr-relevance-quality")
  done = subprocess.run(
    [str(exe), f"--eccv_captions={caps}", "--estimators=constant"],
    env=env,
    capture_output=True,
    text=True,
  )
  assert done.returncode == 1
  assert done.stderr.strip().splitlines()[-1] == (
    "jitr-relevance-quality: error: ECCV Caption: the split has 50 captions of 10 images; "
    "expected COCO's 5K test split (5000 images, 5 captions each in the order of the "
    "standard testall files)"
  )
