"""``scripts/bench_train.py --model=sgr|saf|vsrn|cvse --tiny`` runs one tiny step of jitr and of the
PyTorch reference in a subprocess and prints both rows of each table, whose numbers agree with
each other and with the tiny inputs (batch 8, 5 regions x 16, vocabulary 50, captions of at
most 6 tokens, 4 x 8 evaluation pairs). The variants use few length buckets: each bucket
is one more branch of the compiled step."""

import os
import re
import subprocess
import sys

import pytest

from tests.bench_tables import assert_printed_value, printed, quotient

pytest.importorskip("torch")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _run_bench(args: list[str]) -> subprocess.CompletedProcess:
  """``scripts/bench_train.py ARGS`` in a subprocess; asserts it exits 0."""
  out = subprocess.run(
    [sys.executable, os.path.join(ROOT, "scripts", "bench_train.py"), *args],
    capture_output=True,
    text=True,
    # passive: torch's OpenMP threads never spin-wait (the script's advice for shared machines)
    env={"OMP_WAIT_POLICY": "passive", **os.environ, "PYTHONPATH": ROOT},
    timeout=600,  # a loaded 2-core machine took over 300 s for the sgr run
  )
  assert out.returncode == 0, out.stderr[-3000:]
  return out


def _table(out: str, header: str) -> list[list[str]]:
  """The rows (cells, stripped) of the markdown table of ``out`` whose header starts with
  ``header``."""
  lines = out.splitlines()
  start = next(i for i, line in enumerate(lines) if line.startswith(header))
  rows = []
  for line in lines[start + 2 :]:  # after the header and its |---| line
    if not line.startswith("|"):
      break
    rows.append([c.strip() for c in line.strip().strip("|").split("|")])
  return rows


def _check_time_table(out: str, timed: int) -> dict[str, tuple[float, float]]:
  """Each row's steps/s is 1000 / its ms/step and its ratio its steps/s over PyTorch's;
  returns ``{label: steps/s interval}``."""
  rows = _table(out, f"| implementation | ms/step (median of {timed}) | steps/s |")
  (torch_row,) = [r for r in rows if r[0].startswith("PyTorch")]
  assert torch_row[3] == "1.00×", torch_row
  torch_rate = printed(torch_row[2])
  rates = {}
  for label, ms, rate, ratio, cpu_ms in rows:
    assert printed(ms)[1] > 0 and printed(rate)[1] > 0 and printed(cpu_ms)[1] >= 0, label
    assert_printed_value(rate, quotient((1000.0, 1000.0), printed(ms)), f"{label}: steps/s")
    assert_printed_value(ratio, quotient(printed(rate), torch_rate), f"{label}: ratio")
    rates[label] = printed(rate)
  return rates


_MEMORY = re.compile(r"([0-9.]+) (MiB|GiB)")


def _mib(text: str) -> tuple[float, float]:
  """The interval (MiB) of a ``gib()`` text, ``711 MiB`` or ``1.93 GiB``."""
  m = _MEMORY.fullmatch(text)
  assert m, text
  lo, hi = printed(m.group(1))
  scale = 1024.0 if m.group(2) == "GiB" else 1.0
  return max(lo, 0.0) * scale, hi * scale


def _check_memory_rows(rows: list[list[str]]) -> None:
  """A jitr row's peak is its temp + arguments (XLA memory_analysis); PyTorch's is >= 0."""
  for label, memory in rows:
    m = re.fullmatch(r"(.+) \(XLA memory_analysis: temp (.+) \+ arguments (.+)\)", memory)
    if label.startswith("jitr"):
      assert m, memory
      total, temp, args = (_mib(g) for g in m.groups())
      assert total[0] - 1e-9 <= temp[1] + args[1] and temp[0] + args[0] <= total[1] + 1e-9, memory
    else:
      assert re.fullmatch(r"[0-9.]+ (MiB|GiB) \(ru_maxrss growth over 2 steps\)", memory), memory


def _check_header(out: str, model: str) -> int:
  """The header line names the tiny inputs; returns the step's caption length T."""
  assert f"{model.upper()} train step: batch 8, 5×16 regions, " in out
  assert ", vocab 50, captions " in out
  (t,) = re.findall(rf"### {model.upper()} train step \(T = (\d+)\)", out)
  assert 1 <= int(t) <= 6, t  # trimmed to the longest caption, at most --length 6
  return int(t)


@pytest.mark.slow
@pytest.mark.parametrize(
  "model",
  [
    # the SGRAF networks' smoke run (saf runs the same code as sgr); vsrn and cvse take the
    # script's one other branch (the GPU comparison's flags), whose PyTorch networks are the
    # parity tests' references: all run on request (-m full), the VSE∞ smoke run always
    pytest.param("sgr", marks=pytest.mark.full),
    pytest.param("vsrn", marks=pytest.mark.full),
    pytest.param("cvse", marks=pytest.mark.full),
  ],
)
def test_bench_train_model_runs_one_tiny_step(model):
  args = ["--model", model, "--tiny", "--rounds", "1", "--steps", "1", "--warmup", "0"]
  if model in ("sgr", "saf"):  # lengths drawn from jitr_shapes (two variants side by side: the
    # memory-only test below)
    args += ["--eval", "--variants", "full:2", "--shapes_lengths"]
  else:  # the GPU comparison's flags, on the CPU
    args += ["--torch_device", "cpu", "--precision", "tf32"]
  out = _run_bench(args)
  name = model.upper()
  jitr_rows = (
    [f"| jitr {name} ("]
    if model in ("vsrn", "cvse")
    else [f"| jitr {name}, remat `full`, 2 length bucket(s) |"]
  )
  for row in (*jitr_rows, f"| PyTorch {name}"):
    lines = [line for line in out.stdout.splitlines() if line.startswith(row)]
    assert len(lines) == 2, (row, out.stdout)  # the time table and the memory table
  assert "XLA memory_analysis" in out.stdout and "ru_maxrss growth" in out.stdout
  precision = "tf32" if model in ("vsrn", "cvse") else "highest"
  assert re.search(
    rf"torch \S+ \(cpu, \d+ threads\); float32 matmul precision {precision};", out.stdout
  )
  _check_header(out.stdout, model)
  rates = _check_time_table(out.stdout, timed=1)  # --rounds 1 x --steps 1
  assert len(rates) == len(jitr_rows) + 1, rates
  _check_memory_rows(_table(out.stdout, "| implementation | peak memory of the step |"))
  if model in ("sgr", "saf"):
    assert "jitr_shapes' lengths cut at 6" in out.stdout
    for row, count in (("| jitr `score_split`", 1), ("| PyTorch `shard_attn_scores`", 1)):
      assert sum(line.startswith(row) for line in out.stdout.splitlines()) == count, out.stdout
    assert "### Evaluation scoring, 4 images × 8 captions (32 pairs)" in out.stdout
    rows = _table(out.stdout, "| implementation | seconds | pairs/s |")
    (torch_row,) = [r for r in rows if r[0].startswith("PyTorch")]
    assert torch_row[3] == "1.00×", torch_row
    for label, seconds, rate, ratio in rows:
      assert printed(rate)[1] > 0, label
      assert_printed_value(rate, quotient((32.0, 32.0), printed(seconds)), f"{label}: pairs/s")
      assert_printed_value(ratio, quotient(printed(rate), printed(torch_row[2])), label)


@pytest.mark.slow
@pytest.mark.full  # a benchmark's smoke run (the SGRAF branch's): on request (-m full)
def test_bench_train_memory_only_compiles_each_variant_and_prints_its_memory():
  # one length bucket: each bucket is one more compiled branch (two are timed by the test above)
  out = _run_bench(["--model", "saf", "--tiny", "--memory_only", "--variants", "full:1:4,none:1:4"])
  rows = [line for line in out.stdout.splitlines() if line.startswith("| jitr SAF")]
  assert [row.split(" | ")[0] for row in rows] == [
    f"| jitr SAF, remat `{remat}`, 1 length bucket(s), blocks of 4" for remat in ("full", "none")
  ]
  assert all("(XLA memory_analysis: temp " in row for row in rows)
  _check_memory_rows(_table(out.stdout, "| implementation | peak memory of the step |"))
  assert "PyTorch" not in out.stdout and "ms/step" not in out.stdout  # nothing timed


# Runs scripts/bench_train.py --model=vseinf as __main__, then names the TensorFlow and
# ml_collections modules it imported (a GPU machine without them must run it).
_VSEINF_RUN = """
import runpy, sys
sys.argv = ["bench_train.py", *sys.argv[1:]]
try:
  runpy.run_path({script!r}, run_name="__main__")
except SystemExit as e:
  assert not e.code, e.code
print("imported:", sorted(m for m in sys.modules if m.startswith(("tensorflow", "ml_collections"))))
"""


@pytest.mark.slow
@pytest.mark.full  # a benchmark's smoke run, as the other networks': on request (-m full)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_bench_train_vseinf_runs_one_tiny_step_without_tensorflow(dtype):
  """``--model=vseinf --tiny``: one step of jitr and of the official PyTorch modules from
  the same weights (their eval-mode embeddings agree), both rows of the time table, the
  peak memory of jitr with and without remat and of PyTorch, and neither TensorFlow nor
  ml_collections imported; in float32 and in bfloat16 (jitr's BERT dtype, PyTorch's
  autocast)."""
  script = os.path.join(ROOT, "scripts", "bench_train.py")
  args = ["--model=vseinf", "--tiny", "--rounds", "1", "--steps", "1", "--warmup", "0"]
  args.append(f"--dtype={dtype}")
  out = subprocess.run(
    [sys.executable, "-c", _VSEINF_RUN.format(script=script), *args],
    capture_output=True,
    text=True,
    env={"OMP_WAIT_POLICY": "passive", **os.environ, "PYTHONPATH": ROOT},
    timeout=600,
  )
  assert out.returncode == 0, out.stderr[-3000:]
  text = out.stdout
  assert "VSE∞ train step: batch 8, 5×16 regions, 6 tokens, BERT 1 layers × 32 " in text
  assert f"; compute dtype {dtype}; jax " in text
  assert f"### VSE∞ train step ({dtype}, T = 6, compile " in text
  (diff,) = re.findall(r"embeddings \(same weights\): (\S+)\n", text)
  assert float(diff) < 1e-5, diff
  rates = _check_time_table(text, timed=1)
  assert sorted(rates) == ["PyTorch VSE∞", "jitr VSE∞"]
  rows = _table(text, "| implementation | peak memory of the step |")
  assert [label for label, _ in rows] == ["jitr VSE∞", "jitr VSE∞, remat", "PyTorch VSE∞"]
  _check_memory_rows(rows)
  assert text.rstrip().endswith("imported: []"), text[-500:]
