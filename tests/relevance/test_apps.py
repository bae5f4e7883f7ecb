"""The two absl apps, run as their console scripts would be (in a subprocess: absl flags are global)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def run_app(module: str, *args: str) -> subprocess.CompletedProcess:
  return subprocess.run(
    [sys.executable, "-c", f"from {module} import run; run()", *args],
    cwd=REPO,
    capture_output=True,
    text=True,
    timeout=300,
  )


def test_precompute_cider_and_a_bad_caption_file(small_caps_file, tmp_path):
  from jitr.data.relevance_reader import load_relevance_table
  from jitr.relevance.captions_io import read_precomp_captions
  from jitr.relevance.cider_estimator import CiderEstimator

  out = tmp_path / "rel"
  args = [
    f"--captions={small_caps_file}",
    "--estimator=cider",
    f"--out={out}",
    "--top_k=4",
    "--images_per_shard=2",
  ]
  done = run_app("jitr.apps.precompute", *args)
  assert done.returncode == 0, done.stderr
  assert "wrote 3 shards of cider relevance for 5 images" in done.stdout
  table = load_relevance_table(str(out))
  cs = read_precomp_captions(str(small_caps_file))
  expected = CiderEstimator().fit(cs).top_k(np.arange(5), 4)
  np.testing.assert_array_equal(table.topk_indices, expected.indices)

  # a caption file whose length is not a multiple of 5: one clear error, exit code 1
  bad = tmp_path / "bad_caps.txt"
  bad.write_text("\n".join(cs.captions[:7]) + "\n")
  failed = run_app("jitr.apps.precompute", f"--captions={bad}", "--estimator=cider", f"--out={out}")
  assert failed.returncode == 1
  assert failed.stderr.strip().splitlines()[-1] == (
    f"jitr-precompute: error: {bad}: 7 caption lines is not a multiple of 5 (expected 5 lines per image)"
  )


def test_agreement_app_prints_the_table(tmp_path):
  tokens = tmp_path / "Flickr8k.token.txt"
  tokens.write_text(
    "a.jpg#0\tA dog runs on the grass .\na.jpg#1\tA brown dog runs outside .\na.jpg#2\tThe dog runs on grass .\n"
    "b.jpg#0\tA man rides a bike .\nb.jpg#1\tA man rides a bike on a road .\nb.jpg#2\tA man on a bicycle .\n"
  )
  judged = tmp_path / "CrowdFlowerAnnotations.txt"
  judged.write_text(
    "a.jpg\ta.jpg#0\t1\t3\t0\na.jpg\tb.jpg#2\t0\t0\t3\na.jpg\tb.jpg#0\t0.333333\t1\t2\n"
    "b.jpg\tb.jpg#1\t1\t3\t0\nb.jpg\ta.jpg#1\t0\t0\t3\n"
  )
  done = run_app(
    "jitr.apps.agreement", f"--captions={tokens}", f"--judgments={judged}", "--estimators=cider"
  )
  assert done.returncode == 0, done.stderr
  row = next(line for line in done.stdout.splitlines() if line.startswith("| CIDEr-D |"))
  # own captions score above the other image's captions, which share little with the references
  from jitr.relevance.agreement import build_protocol, kendall_tau, read_judgments
  from jitr.relevance.captions_io import read_flickr8k_tokens
  from jitr.relevance.cider_estimator import CiderEstimator

  p = build_protocol(read_judgments(str(judged)), read_flickr8k_tokens(str(tokens)))
  tau = 100 * kendall_tau(
    CiderEstimator().pair_scores(p.candidates, p.reference_sets), p.human, "b"
  )
  assert row == f"| CIDEr-D | {tau:.1f} |" and tau > 50
  assert "| CIDEr-D (published) | 24.6 |" in done.stdout
