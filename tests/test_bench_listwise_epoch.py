"""``scripts/bench_listwise_epoch.py --tiny`` times VSE∞'s train step with the triplet and
with the triplet + Smooth-NDCG in a subprocess: its table's epoch seconds are its ms/step
times Flickr30K's batches, and its ratio the two steps' (beside the paper's 1.054)."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


@pytest.mark.slow  # two compiled VSE∞ steps in a process (about 20 s)
def test_the_tiny_run_prints_both_steps_and_their_ratio():
  out = subprocess.run(
    [sys.executable, os.path.join(ROOT, "scripts", "bench_listwise_epoch.py"), "--tiny"],
    capture_output=True,
    text=True,
    env={**os.environ, "PYTHONPATH": ROOT},
    timeout=600,
  )
  assert out.returncode == 0, out.stderr[-3000:]
  rows = dict(re.findall(r"^\| (VSE∞|\+ Listwise) \| (.*) \|$", out.stdout, re.M))
  ms = {}
  for name, paper in (("VSE∞", "229.6"), ("+ Listwise", "241.9")):
    step, epoch, printed = (cell.strip() for cell in rows[name].split("|"))
    ms[name] = float(step)
    assert float(epoch) == pytest.approx(float(step) * (145_000 // 8) / 1000, abs=0.06 * 18)
    assert printed == paper
  ratio = re.search(r"\+ Listwise / VSE∞: jitr ([\d.]+), paper 1\.054$", out.stdout, re.M)
  assert float(ratio.group(1)) == pytest.approx(ms["+ Listwise"] / ms["VSE∞"], abs=0.06)
