"""scripts/bench_losses.py prints one row per N, and a run that fails or overruns (e.g. XLA
out of memory while compiling the naive loss on a GPU) becomes a row, not a crash."""

import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "scripts", "bench_losses.py")


def _bench(*flags):
  out = subprocess.run(
    [sys.executable, SCRIPT, "--sizes", "16", "--repeats", "1", *flags],
    capture_output=True, text=True, timeout=300, check=True, cwd="/",
  )  # fmt: skip
  return [line for line in out.stdout.splitlines() if line.startswith("| 16 |")]


def test_rows_and_failures_are_rows():
  (row,) = _bench("--naive_budget_gb", "0")
  cells = [c.strip() for c in row.strip("|").split("|")]
  assert float(cells[1]) >= 0 and float(cells[3]) >= 0 and float(cells[5]) > 0  # s, s, MB
  assert re.fullmatch(r"skipped: needs ~[0-9.]+ GB \(XLA estimate\)", cells[6])
  (row,) = _bench("--timeout_s", "0.01")
  failed = "jitr failed: over --timeout_s=0.01 s (compile included)"
  assert row == f"| 16 | {failed} | – | – | – | – | – | – | – |"
