"""scripts/bench_window.py: the block it ranks is the workdir's test scores of each image
against its first caption, its spread counts the pairs within the saturation width by
hand, and its table row prints what it measured."""

import math

import numpy as np
import pytest

from tests.bench_tables import assert_printed_value, load_script, printed, quotient, table_rows
from tests.experiment.test_evaluate_workdir import _member_sim, make_workdir, tiny_config

pytestmark = pytest.mark.slow  # builds jitr_shapes' tiny split and a workdir


def test_block_spread_and_row(tmp_path, monkeypatch, capsys):
  bench = load_script("bench_window")
  member = make_workdir(tmp_path / "w", tiny_config(0))
  block = bench.trained_block(str(tmp_path / "w"), None)
  sim, owners = _member_sim(member)
  first = [int(np.flatnonzero(owners == i)[0]) for i in range(sim.shape[0])]
  np.testing.assert_allclose(block, sim[:, first], rtol=1e-5, atol=1e-6)
  n = block.shape[0]
  width = (math.log(n) + 24 * math.log(2)) * bench.TEMPERATURE
  near = [np.abs(m[:, :, None] - m[:, None, :]) <= width for m in (block, block.T)]
  share = sum(int(x.sum()) - n * n for x in near) / (2 * n * n * (n - 1))
  runs = []
  for m in (block, block.T):
    for row in m:
      runs.append(max(int(np.sum((row > s) & (row <= s + width))) for s in row))
      runs.append(max(int(np.sum((row < s) & (row >= s - width))) for s in row))
  spread = bench.spread(block)
  assert spread["unsaturated"] == pytest.approx(share, rel=1e-6)
  assert spread["widest_run"] == max(runs)
  monkeypatch.setattr("sys.argv", ["bench_window.py", str(tmp_path / "w"), "--repeats", "1"])
  capsys.readouterr()
  bench.main()
  (row,) = table_rows(capsys.readouterr().out, "| w |")
  assert row[1] == str(n) and row[3] == str(spread["widest_run"])
  assert_printed_value(row[2], 100 * share, "unsaturated %")
  assert_printed_value(row[6], quotient(printed(row[4]), printed(row[5])), "full / window")
