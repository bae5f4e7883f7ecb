"""scripts/bench_losses.py: its naive loss is jitr's loss (so the timings compare the same
function), each row's numbers are the ones its measurements give, and a run that fails or
overruns (e.g. XLA out of memory while compiling the naive loss on a GPU) becomes a row,
not a crash."""

import json
import math
import subprocess
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.bench_tables import assert_printed_value, load_script, table_rows

reference_runs: list[list[str]] = []  # the reference passes' (op, N) that _main was asked for

N = 16
KERNEL_RATE = 0.25  # G pairs/s: the fused rank pass, stood in for (its N = 1024 run is slow)
EXP_RATE = 0.5  # G pairs/s: the fused pass with one exp per pair, stood in for likewise


def _bench_inputs(n: int):
  """run_one's inputs: ``sim`` uniform in [-1, 1], relevance uniform with positives 1."""
  rng = np.random.default_rng(0)
  sim = jnp.asarray(rng.uniform(-1, 1, (n, n)), jnp.float32)
  relevance = jnp.asarray(rng.uniform(0, 1, (n, n)), jnp.float32)
  return sim, relevance.at[jnp.diag_indices(n)].set(1.0)


def _main(bench, monkeypatch, capsys, *flags) -> str:
  """``bench.main()`` with ``flags``; the reference passes' subprocesses (sigmoid and exp,
  at ``--reference_n``, recorded in ``reference_runs``) answer KERNEL_RATE and EXP_RATE,
  every other subprocess runs."""
  real_run = subprocess.run
  rates = {"sigmoid": KERNEL_RATE, "exp": EXP_RATE}

  def run(cmd, *args, **kwargs):
    if cmd[-3] == "--one" and cmd[-2] in rates:
      reference_runs.append(cmd[-2:])
      return types.SimpleNamespace(returncode=0, stdout=json.dumps({"rate": rates[cmd[-2]]}) + "\n")
    return real_run(cmd, *args, **kwargs)

  fake = types.SimpleNamespace(run=run, TimeoutExpired=subprocess.TimeoutExpired)
  monkeypatch.setattr(bench, "subprocess", fake)
  monkeypatch.setattr(sys, "argv", ["bench_losses.py", "--sizes", str(N), *flags])
  capsys.readouterr()
  bench.main()
  return capsys.readouterr().out


def _in_process(bench, monkeypatch) -> dict:
  """Replaces the per-(implementation, N) subprocess by ``run_one`` in this process;
  returns ``{impl: result}`` as it fills."""
  measured = {}

  def run_impl(impl, n, args):
    measured[impl] = bench.run_one(impl, n, args.repeats, args.naive_budget_gb, args.top_m)
    return measured[impl]

  monkeypatch.setattr(bench, "_run_impl", run_impl)
  return measured


def test_naive_loss_is_jitr_loss_in_value_and_gradient():
  bench = load_script("bench_losses")
  sim, relevance = _bench_inputs(N)
  # each compiled as one program, as run_one times it (not dispatched op by op)
  ours, ours_grad = jax.jit(jax.value_and_grad(bench._jitr_loss))(sim, relevance)
  naive, naive_grad = jax.jit(jax.value_and_grad(bench._naive_loss))(sim, relevance)
  assert 0.5 < float(ours) < 4.0  # two triplets (margin 0.2) + two 1 - NDCG terms
  np.testing.assert_allclose(float(naive), float(ours), rtol=1e-5)
  np.testing.assert_allclose(np.asarray(naive_grad), np.asarray(ours_grad), atol=1e-6)
  assert float(jnp.abs(ours_grad).max()) > 1e-3  # a gradient to compare


def test_row_is_the_measured_numbers(monkeypatch, capsys):
  bench = load_script("bench_losses")
  measured = _in_process(bench, monkeypatch)
  reference_runs.clear()
  out = _main(bench, monkeypatch, capsys, "--repeats", "2", "--reference_n", "64", "--top_m", "4")
  assert "best of 2" in out
  assert reference_runs == [["sigmoid", "64"], ["exp", "64"]]
  assert f"(jax.nn.sigmoid + sum, N = 64) = {KERNEL_RATE:.2f} G pairs/s" in out
  assert f"one exp per pair = {EXP_RATE:.2f} G pairs/s" in out
  (row,) = table_rows(out, f"| {N} |")
  assert len(row) == 15, row
  j, v, m, w = (measured[impl] for impl in ("jitr", "naive", "at_m", "window"))
  assert "| @4 fwd+bwd s | full / @4 | window fwd+bwd s | unsaturated | full / window |" in out
  for result, impl in ((j, "jitr"), (v, "naive"), (m, "at_m"), (w, "window")):
    assert result["impl"] == impl and result["n"] == N, result
    for key in ("fwd_s", "fwd_bwd_s", "peak_mb", "xla_estimate_gb"):
      assert math.isfinite(result[key]) and result[key] > 0, (impl, key, result[key])
    # XLA's estimate counts the arguments: sim and relevance, N x N float32 each
    assert result["xla_estimate_gb"] * 2**30 >= 2 * N * N * 4, result
  pairs = 2 * N**3  # sigmoid pairs of one forward rank pass, both directions
  expected = [
    N,
    j["fwd_s"],
    pairs / j["fwd_s"] / 1e9,
    pairs / j["fwd_s"] / 1e9 / EXP_RATE,
    j["fwd_bwd_s"],
    j["fwd_bwd_s"] / pairs * KERNEL_RATE * 1e9,
    j["peak_mb"],
    v["fwd_bwd_s"],
    v["peak_mb"],
    v["fwd_bwd_s"] / j["fwd_bwd_s"],
    m["fwd_bwd_s"],
    j["fwd_bwd_s"] / m["fwd_bwd_s"],
    w["fwd_bwd_s"],
    100 * w["unsaturated"],
    j["fwd_bwd_s"] / w["fwd_bwd_s"],
  ]
  names = ["N", "fwd s", "G pairs/s", "fwd / exp pass", "fwd+bwd s", "per-pair cost",
           "peak MB", "naive s", "naive peak MB", "naive / jitr", "@M s", "full / @M",
           "window s", "unsaturated %", "full / window"]  # fmt: skip
  for cell, value, name in zip(row, expected, names):
    assert_printed_value(cell, value, name)
  assert row[5].endswith("×") and row[9].endswith("×") and row[11].endswith("×")
  assert row[13].endswith("%") and row[14].endswith("×")
  # the share of pairs within ln(N·2²⁴)·τ of each other, counted by hand on the same scores
  sim = np.asarray(_bench_inputs(N)[0])
  width = (math.log(N) + 24 * math.log(2)) * bench.TEMPERATURE
  near = np.abs(sim[:, :, None] - sim[:, None, :]) <= width  # [row, j, k] of each row
  near_t = np.abs(sim.T[:, :, None] - sim.T[:, None, :]) <= width
  share = ((near.sum() - N * N) + (near_t.sum() - N * N)) / (2 * N * N * (N - 1))
  assert w["unsaturated"] == pytest.approx(share, rel=1e-6)


def test_failures_and_skips_are_rows(monkeypatch, capsys):
  bench = load_script("bench_losses")
  measured = _in_process(bench, monkeypatch)
  (row,) = table_rows(_main(bench, monkeypatch, capsys, "--naive_budget_gb", "0"), f"| {N} |")
  assert measured["naive"] == {
    "impl": "naive",
    "n": N,
    "skipped": measured["naive"]["skipped"],
  }
  assert row[7] == f"skipped: {measured['naive']['skipped']}" and row[8:10] == ["–", "–"]
  assert measured["naive"]["skipped"] == "needs ~0.0 GB (XLA estimate)"  # over a 0 GB budget
  assert_printed_value(row[4], measured["jitr"]["fwd_bwd_s"], "jitr fwd+bwd s")
  monkeypatch.undo()  # the real per-(implementation, N) subprocesses, stopped by the limit
  bench = load_script("bench_losses")
  (row,) = table_rows(_main(bench, monkeypatch, capsys, "--timeout_s", "0.01"), f"| {N} |")
  failed = "jitr failed: over --timeout_s=0.01 s (compile included)"
  assert row == [str(N), failed] + ["–"] * 13


def test_xla_flags_reach_every_run(monkeypatch, capsys):
  """``--xla_flags`` is added to ``XLA_FLAGS``, which every per-run process inherits,
  and the header names them (the GPU table's large N need the autotuner off)."""
  bench = load_script("bench_losses")
  _in_process(bench, monkeypatch)
  monkeypatch.setenv("XLA_FLAGS", "--xla_dump_hlo_as_proto")
  out = _main(bench, monkeypatch, capsys, "--xla_flags=--xla_dump_hlo_as_text")
  assert "XLA_FLAGS='--xla_dump_hlo_as_proto --xla_dump_hlo_as_text'" in out.splitlines()[0]
  assert bench.os.environ["XLA_FLAGS"] == "--xla_dump_hlo_as_proto --xla_dump_hlo_as_text"
