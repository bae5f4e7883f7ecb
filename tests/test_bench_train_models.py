"""Smoke: ``scripts/bench_train.py --model=sgr|saf|vsrn --tiny`` runs one tiny step of
jitr and of the PyTorch reference in a subprocess and prints both rows of each table."""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _run_bench(args: list[str]) -> subprocess.CompletedProcess:
  """``scripts/bench_train.py ARGS`` in a subprocess; asserts it exits 0."""
  out = subprocess.run(
    [sys.executable, os.path.join(ROOT, "scripts", "bench_train.py"), *args],
    capture_output=True,
    text=True,
    env={**os.environ, "PYTHONPATH": ROOT},
    timeout=300,
  )
  assert out.returncode == 0, out.stderr[-3000:]
  return out


@pytest.mark.slow
@pytest.mark.parametrize("model", ["sgr", "vsrn"])  # saf runs the same code as sgr
def test_bench_train_model_runs_one_tiny_step(model):
  args = ["--model", model, "--tiny", "--rounds", "1", "--steps", "1", "--warmup", "0"]
  if model != "vsrn":  # two jitr variants side by side, lengths drawn from jitr_shapes
    args += ["--eval", "--variants", "full:1,full:4", "--shapes_lengths"]
  else:  # the GPU comparison's flags, on the CPU
    args += ["--torch_device", "cpu", "--precision", "tf32"]
  out = _run_bench(args)
  name = model.upper()
  jitr_rows = (
    [f"| jitr {name} ("]
    if model == "vsrn"
    else [f"| jitr {name}, remat `full`, {n} length bucket(s) |" for n in (1, 4)]
  )
  for row in (*jitr_rows, f"| PyTorch {name}"):
    lines = [line for line in out.stdout.splitlines() if line.startswith(row)]
    assert len(lines) == 2, (row, out.stdout)  # the time table and the memory table
  assert "XLA memory_analysis" in out.stdout and "ru_maxrss growth" in out.stdout
  precision = "tf32" if model == "vsrn" else "highest"
  assert re.search(
    rf"torch \S+ \(cpu, \d+ threads\); float32 matmul precision {precision};", out.stdout
  )
  if model != "vsrn":
    assert "(32 pairs)" in out.stdout
    assert "jitr_shapes' lengths cut at 6" in out.stdout
    for row, count in (("| jitr `score_split`", 2), ("| PyTorch `shard_attn_scores`", 1)):
      assert sum(line.startswith(row) for line in out.stdout.splitlines()) == count, out.stdout


@pytest.mark.slow
def test_bench_train_memory_only_compiles_each_variant_and_prints_its_memory():
  out = _run_bench(["--model", "saf", "--tiny", "--memory_only", "--variants", "full:8:8,none:8:8"])
  rows = [line for line in out.stdout.splitlines() if line.startswith("| jitr SAF")]
  assert [row.split(" | ")[0] for row in rows] == [
    f"| jitr SAF, remat `{remat}`, 8 length bucket(s), blocks of 8" for remat in ("full", "none")
  ]
  assert all("(XLA memory_analysis: temp " in row for row in rows)
  assert "PyTorch" not in out.stdout and "ms/step" not in out.stdout  # nothing timed
