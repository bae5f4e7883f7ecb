"""scripts/bench_pinned_inputs.py runs as documented, on a tiny folder: the first pin and the
moved folder hash every file, the unchanged check none."""

import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_the_bench_hashes_every_file_only_when_the_pins_cannot_vouch_for_it(tmp_path):
  done = subprocess.run(
    [sys.executable, str(REPO / "scripts" / "bench_pinned_inputs.py"), f"--root={tmp_path / 'r'}",
     "--num_images=20", "--num_eval_images=5", "--repeats=1"],
    capture_output=True, text=True, timeout=300,
  )  # fmt: skip
  assert done.returncode == 0, done.stderr[-2000:]
  rows = [line.split("|")[1:3] for line in done.stdout.splitlines() if line.startswith("| ")]
  assert [(name.strip()[:11], int(count)) for name, count in rows[1:]] == [
    ("first pin (", 6),
    ("check, file", 0),
    ("check, fold", 6),
  ]
  assert sorted(p.name for p in (tmp_path / "r").iterdir())[0] == "f30k_precomp"
