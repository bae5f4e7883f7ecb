"""jitr.figures: pyplot on Agg, and a PNG written whole or not at all, its figure closed."""

import subprocess
import sys

import pytest

from jitr import figures


def test_a_png_is_written_whole_and_its_figure_closed(tmp_path):
  plt = figures.pyplot()
  fig, ax = plt.subplots()
  ax.plot([0, 1], [1, 0])
  path = tmp_path / "a.png"
  figures.save_png(fig, str(path), dpi=50)
  assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  assert not plt.fignum_exists(fig.number)
  assert [p.name for p in tmp_path.iterdir()] == ["a.png"]  # no temporary file left


def test_a_failed_write_leaves_the_old_file_and_closes_the_figure(tmp_path):
  plt = figures.pyplot()
  fig, _ = plt.subplots()
  path = tmp_path / "a.png"
  path.write_bytes(b"old")
  with pytest.raises(ValueError):
    figures.save_png(fig, str(path), dpi=-1)  # matplotlib refuses a negative dpi
  assert path.read_bytes() == b"old"
  assert [p.name for p in tmp_path.iterdir()] == ["a.png"]
  assert not plt.fignum_exists(fig.number)


def test_importing_it_loads_neither_matplotlib_nor_jax():
  code = "import sys, jitr.figures; print(sorted({'matplotlib', 'jax'} & set(sys.modules)))"
  done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert done.stdout.strip() == "[]"
