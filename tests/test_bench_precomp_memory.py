"""``scripts/bench_precomp_memory.py`` on a tiny split: it writes the split it is asked for,
and its printed row says the image count, the feature file's real size, a positive peak RSS
and their ratio; a second run reuses the split."""

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.bench_tables import assert_printed_value, printed, quotient, table_rows

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
GIB = 2**30
HEADER = (
  "| model | train images | feature file (GiB) | peak RSS after loading (GiB) |"
  " peak RSS after the steps (GiB) | peak RSS / file size (%) | s/step |"
)
TINY = ["--num_images=64", "--num_eval_images=16", "--batch_size=16", "--steps=2"]
TINY += ["--models=vse", "--embed_dim=16", "--word_dim=8"]


def _run(root) -> str:
  out = subprocess.run(
    [sys.executable, os.path.join(ROOT, "scripts", "bench_precomp_memory.py"), f"--root={root}"]
    + TINY,
    capture_output=True,
    text=True,
    env={**os.environ, "PYTHONPATH": ROOT},
    timeout=300,
  )
  assert out.returncode == 0, out.stderr[-3000:]
  return out.stdout


@pytest.mark.slow  # two interpreters with jax, one small XLA compile: about 20 s on 2 shared cores
@pytest.mark.full  # a benchmark's smoke run: on request (-m full)
def test_bench_precomp_memory_row(tmp_path):
  stdout = _run(tmp_path)
  folder = tmp_path / "f30k_precomp"
  assert f"{folder}: generated train 64 / dev and test 16 images" in stdout, stdout
  assert "machine: " in stdout and " CPUs, MemTotal " in stdout, stdout
  for split, n in (("train", 64), ("dev", 16), ("test", 16)):
    assert np.load(folder / f"{split}_ims.npy", mmap_mode="r").shape == (n, 36, 2048)
    assert len((folder / f"{split}_caps.txt").read_text().splitlines()) == 5 * n
  assert HEADER in stdout.splitlines(), stdout
  (row,) = table_rows(stdout, "| vse |")
  _, images, size, load_peak, peak, ratio, step = row
  assert images == "64", row
  assert printed(size)[0] > 0, row
  assert_printed_value(size, os.path.getsize(folder / "train_ims.npy") / GIB, "feature file")
  assert printed(load_peak)[1] > 0 and printed(peak)[1] > 0, row
  assert printed(peak)[1] >= printed(load_peak)[0], row  # a peak so far never goes down
  lo, hi = quotient(printed(peak), printed(size))
  assert_printed_value(ratio, (100 * lo, 100 * hi), "peak RSS / file size (%)")
  assert printed(step)[1] > 0, row

  again = _run(tmp_path)  # the split is there: used, not written again
  assert f"{folder}: using the split there" in again, again
  assert table_rows(again, "| vse |")[0][1:3] == ["64", size]
