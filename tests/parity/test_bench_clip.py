"""``scripts/bench_train.py --model=clip --tiny`` (scripts/bench_clip.py) as documented: both
steps start from the same weights (their eval-mode embeddings agree), and each table's
derived columns are its measured ones (steps/s = 1000 / ms, the ratio against open_clip,
images/s against open_clip's). Runs in the environment ``.ci/open_clip_parity.sh`` makes."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.bench_tables import assert_printed_value, printed, quotient, table_rows

pytestmark = pytest.mark.open_clip
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_tiny_clip_bench_prints_consistent_tables():
  args = ["--model=clip", "--tiny", "--batch", "8", "--rounds", "1", "--steps", "2"]
  done = subprocess.run(
    [sys.executable, os.path.join(ROOT, "scripts", "bench_train.py"), *args, "--images", "6"],
    capture_output=True,
    text=True,
    env={"OMP_WAIT_POLICY": "passive", **os.environ, "PYTHONPATH": ROOT},
    timeout=600,
  )
  assert done.returncode == 0, done.stderr[-3000:]
  out = done.stdout
  assert "2 + 2 blocks (width 64 / 64), 64² images, 77 tokens, batch 8" in out
  difference = re.search(r"eval-mode embeddings \(same weights\): (\S+)", out).group(1)
  assert float(difference) < 1e-5
  step_section, images_section = out.split("### ")[1:3]
  rows = [r for r in table_rows(step_section, "| ") if r[0] != "implementation"]
  steps = {r[0]: r for r in rows if len(r) == 5}
  memory = {r[0]: r[1] for r in rows if len(r) == 2 and not r[0].startswith("---")}
  assert set(steps) == {"jitr", "open_clip"}
  ms = {name: printed(row[1]) for name, row in steps.items()}
  for name, row in steps.items():
    assert_printed_value(row[2], quotient((1000.0, 1000.0), ms[name]), f"{name} steps/s")
    assert_printed_value(row[3], quotient(ms["open_clip"], ms[name]), f"{name} ratio")
  assert set(memory) == {"jitr", "jitr, remat", "open_clip"}
  assert all(re.match(r"[0-9.]+ [MG]iB", text) for text in memory.values()), memory
  rates = {r[0]: r for r in table_rows(images_section, "| ") if len(r) == 3 and r[1][0].isdigit()}
  assert set(rates) == {"jitr ImageFiles.take (PIL)", "open_clip transform"}
  ref = printed(rates["open_clip transform"][1])
  for row in rates.values():
    assert_printed_value(row[2], quotient(printed(row[1]), ref), row[0])
