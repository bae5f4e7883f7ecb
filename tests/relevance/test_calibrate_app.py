"""jitr-relevance-calibrate: the table it writes is the isotonic fit of the judged pairs,
checked against pycocoevalcap's CIDEr-D (x) and scikit-learn's IsotonicRegression (the fit)."""

import json
import pathlib
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
CAPS = {
  "a.jpg": ["a dog runs on grass", "a brown dog runs", "dog on the grass", "a dog plays",
            "the dog runs fast"],
  "b.jpg": ["a cat sleeps on a sofa", "a grey cat sleeps", "cat on the sofa", "a cat rests",
            "the cat naps"],
}  # fmt: skip
# Chosen so the fit pools: five pairs share x = 0 (no common n-gram), and two neighbouring
# pairs of x are out of order in y (0.1 after the x = 0 mean 0.206; 0.8 before 0.67).
JUDGED = [("a.jpg", "a.jpg#0", 1.0), ("a.jpg", "b.jpg#1", 0.0), ("b.jpg", "a.jpg#3", 0.0),
          ("b.jpg", "b.jpg#2", 0.67), ("a.jpg", "b.jpg#4", 0.33), ("b.jpg", "a.jpg#2", 0.5),
          ("a.jpg", "b.jpg#2", 0.1), ("b.jpg", "a.jpg#1", 0.2),
          ("a.jpg", "a.jpg#4", 0.8)]  # fmt: skip


def _expected_x() -> np.ndarray:
  """x of each judged pair from pycocoevalcap's CIDEr-D: the CrowdFlower protocol removes
  every judged own caption from its image's references (for all of that image's
  judgments), one ``compute_score`` call over the judged pairs (document frequencies of
  those reference sets), relevance = clip(CIDEr-D / 10, 0, 1)."""
  from pycocoevalcap.cider.cider import Cider

  text = {f"{img}#{k}": c for img, caps in CAPS.items() for k, c in enumerate(caps)}
  # lower case, no punctuation: the PTB tokenization of every caption is the caption
  assert all(re.fullmatch(r"[a-z]+( [a-z]+)*", c) for c in text.values())
  own = {c for img, c, _ in JUDGED if c.startswith(f"{img}#")}
  refs = {
    img: [c for k, c in enumerate(caps) if f"{img}#{k}" not in own] for img, caps in CAPS.items()
  }
  gts = {p: refs[img] for p, (img, _, _) in enumerate(JUDGED)}
  res = {p: [text[c]] for p, (_, c, _) in enumerate(JUDGED)}
  _, scores = Cider().compute_score(gts, res)
  return np.clip(np.asarray(scores, np.float64) / 10.0, 0.0, 1.0)


def test_writes_the_isotonic_fit_of_the_protocol_pairs(tmp_path):
  pytest.importorskip("pycocoevalcap")
  from sklearn.isotonic import IsotonicRegression

  token = tmp_path / "Flickr8k.token.txt"
  token.write_text(
    "".join(f"{img}#{k}\t{c}\n" for img, caps in CAPS.items() for k, c in enumerate(caps))
  )
  judgments = tmp_path / "CrowdFlowerAnnotations.txt"
  judgments.write_text("".join(f"{i}\t{c}\t{y}\t1\t1\n" for i, c, y in JUDGED))
  done = subprocess.run(
    [str(pathlib.Path(sys.executable).with_name("jitr-relevance-calibrate")), f"--captions={token}",
     f"--judgments={judgments}", "--estimators=cider", f"--output_dir={tmp_path / 'out'}"],
    cwd=tmp_path, capture_output=True, text=True, timeout=300,
    env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
  )  # fmt: skip
  assert done.returncode == 0, done.stderr[-2000:]
  path = tmp_path / "out" / "crowdflower-cider.json"
  written = json.loads(path.read_text())
  knots_x, knots_y = np.asarray(written["x"]), np.asarray(written["y"])

  # the fit of y on x (rounded to 6 decimals, as the app keeps its knots distinct)
  x = np.round(_expected_x(), 6)
  y = np.array([y for _, _, y in JUDGED])
  assert np.sum(x == 0.0) == 5 and len(np.unique(x)) == 5  # ties, and pooling to do
  iso = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(x, y)
  np.testing.assert_allclose(knots_x, iso.X_thresholds_, atol=1e-6)
  np.testing.assert_allclose(knots_y, np.clip(iso.y_thresholds_, 0.0, 1.0), atol=1e-6)
  np.testing.assert_allclose(knots_y, iso.predict(knots_x), atol=1e-6)
  # the map the table describes (linear between knots, constant beyond) is sklearn's
  grid = np.linspace(-0.1, 1.1, 241)
  np.testing.assert_allclose(np.interp(grid, knots_x, knots_y), iso.predict(grid), atol=1e-6)
  # by hand: x = 0 and the next x pool to (0 + 0 + .33 + .5 + .2 + .1) / 6; .8 and .67 pool
  assert len(knots_x) == 5 and knots_x[0] == 0.0
  np.testing.assert_allclose(knots_y, [1.13 / 6] * 2 + [0.735] * 2 + [1.0], atol=1e-6)

  assert written["pairs"] == len(JUDGED) and written["estimator"] == "cider"
  assert f"{path}: {len(knots_x)} knots from {len(JUDGED)} judged pairs" in done.stdout
