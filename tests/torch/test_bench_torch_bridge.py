"""``scripts/bench_torch_bridge.py`` at N = 128: the printed row's ratio and overhead are the
quotient and difference of its printed times, and its memory cells are positive and at least
what each step must hold. Under an address-space limit far below what PyTorch has mapped,
the PyTorch step's child process reports an out-of-memory error, and the row says so in its
PyTorch cells while keeping jitr's."""

import os
import subprocess
import sys

import pytest

from tests.bench_tables import assert_printed_value, load_script, printed, quotient, table_rows

pytest.importorskip("torch")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
N = 128
MIB = 2**20
HEADER = (
  "| N | PyTorch loss step (ms) | jitr.torch step (ms) | PyTorch / jitr.torch | bridge call (ms)"
  " | direct JAX (ms) | overhead per call (ms) | PyTorch step peak (MiB, ru_maxrss growth over"
  " 1 step) | jitr loss peak (MiB, XLA memory_analysis: temp + arguments + outputs) |"
)


@pytest.mark.slow  # three XLA compiles, two interpreters with torch: 18-30 s on 2 shared cores
@pytest.mark.full  # a benchmark's smoke run: on request (-m full)
def test_bench_torch_bridge_row_agrees_with_itself():
  out = subprocess.run(
    [sys.executable, os.path.join(ROOT, "scripts", "bench_torch_bridge.py")]
    + ["--sizes", str(N), "--repeats", "1"],
    capture_output=True,
    text=True,
    env={"OMP_WAIT_POLICY": "passive", **os.environ, "PYTHONPATH": ROOT},
    timeout=300,
  )
  assert out.returncode == 0, out.stderr[-3000:]
  assert HEADER in out.stdout.splitlines(), out.stdout
  assert "PyTorch step: a child process per N, address space (RLIMIT_AS) limit " in out.stdout
  (row,) = table_rows(out.stdout, f"| {N} |")
  _, t_ref, t_jitr, ratio, call, direct, overhead, ref_peak, jitr_peak = row
  for cell in (t_ref, t_jitr, call, direct):
    assert printed(cell)[0] > 0, row
  assert ratio.endswith("x"), ratio
  assert_printed_value(ratio, quotient(printed(t_ref), printed(t_jitr)), "PyTorch / jitr.torch")
  (c_lo, c_hi), (d_lo, d_hi) = printed(call), printed(direct)
  assert_printed_value(overhead, (c_lo - d_hi, c_hi - d_lo), "overhead per call")
  # PyTorch's step holds at least one [N, N, N] float32 tensor; jitr's loss program at least
  # its arguments (sim, refs, caps) and sim's gradient
  assert printed(ref_peak)[1] >= 4 * N**3 / MIB, ref_peak
  jitr_floor = 4 * (N * N + N * 5 * 384 + N * 384 + N * N) / MIB
  assert printed(jitr_peak)[1] >= jitr_floor, (jitr_peak, jitr_floor)


def test_bench_torch_bridge_out_of_memory_row():
  # RLIMIT_AS is set after torch is imported, below what it has mapped: the child starts,
  # and the step's first allocation that needs new address space fails
  bench = load_script("bench_torch_bridge")
  ref = bench._torch_step(N, 1, 0.25)
  assert list(ref) == ["out_of_memory"] and "allocate" in ref["out_of_memory"], ref
  (row,) = table_rows(bench._row(N, ref, 20.5, 10.5, 9.0, 4.0, 0.25), f"| {N} |")
  oom = "out of memory (limit 0.25 GiB)"
  assert row == [str(N), oom, "20.5", "—", "10.5", "9.0", "1.50", oom, "4.0"], row


def test_the_pytorch_step_runs_on_the_device_it_is_given():
  """Every tensor of the step (encoders, batch, the reference loss's masks) is on
  ``--torch_device``: on PyTorch's ``meta`` device (shapes without data) a tensor left on
  the CPU fails the step, as it would on CUDA."""
  bench = load_script("bench_torch_bridge")
  bench._step_fn(8, bench._torch_loss, "meta")()
