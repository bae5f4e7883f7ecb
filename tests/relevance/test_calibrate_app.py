"""jitr-relevance-calibrate: the table it writes is the isotonic fit of the judged pairs."""

import json
import pathlib
import subprocess
import sys
from pathlib import Path

import numpy as np

from jitr.losses.calibration import load_table
from jitr.relevance.cider import cider_d
from jitr.relevance.isotonic import isotonic_fit
from jitr.relevance.tokenize import ptb_tokenize

REPO = Path(__file__).resolve().parents[2]
CAPS = {
  "a.jpg": ["a dog runs on grass", "a brown dog runs", "dog on the grass", "a dog plays",
            "the dog runs fast"],
  "b.jpg": ["a cat sleeps on a sofa", "a grey cat sleeps", "cat on the sofa", "a cat rests",
            "the cat naps"],
}  # fmt: skip
JUDGED = [("a.jpg", "a.jpg#0", 1.0), ("a.jpg", "b.jpg#1", 0.0), ("b.jpg", "a.jpg#3", 0.0),
          ("b.jpg", "b.jpg#2", 0.67), ("a.jpg", "b.jpg#4", 0.33)]  # fmt: skip


def test_writes_the_isotonic_fit_of_the_protocol_pairs(tmp_path):
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
  # the CrowdFlower protocol: a judged own caption leaves its image's references (for all
  # of that image's judgments); x = CIDEr-D / 10 against the rest
  text = {f"{img}#{k}": c for img, caps in CAPS.items() for k, c in enumerate(caps)}
  refs = {"a.jpg": CAPS["a.jpg"][1:], "b.jpg": CAPS["b.jpg"][:2] + CAPS["b.jpg"][3:]}
  cands = [[ptb_tokenize(text[c])] for _, c, _ in JUDGED]
  ref_sets = [[ptb_tokenize(r) for r in refs[i]] for i, _, _ in JUDGED]
  x = np.clip(np.asarray(cider_d([c[0] for c in cands], ref_sets)) / 10.0, 0.0, 1.0)
  kx, ky = isotonic_fit(np.round(x, 6), np.array([y for _, _, y in JUDGED]))
  table = load_table(str(path))
  np.testing.assert_allclose(table.x, kx, atol=1e-9)
  np.testing.assert_allclose(table.y, np.round(ky, 6), atol=1e-9)
  assert json.loads(path.read_text())["pairs"] == 5
  assert f"{path}: {len(kx)} knots from 5 judged pairs" in done.stdout
