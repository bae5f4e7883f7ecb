"""``native_output_to_stderr``: what C++ writes to file descriptor 1 (Gloo's connection
lines) goes to stderr, Python's prints stay on stdout, in a fresh process."""

import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
PROGRAM = """
import os
from jitr.apps.native_stdout import native_output_to_stderr
print("before", flush=True)
print(native_output_to_stderr(), native_output_to_stderr())
os.write(1, b"[Gloo] Rank 0 is connected to 1 peer ranks.\\n")  # as C++ writes it
print("table")
"""


def test_descriptor_1_goes_to_stderr_and_python_prints_stay_on_stdout():
  done = subprocess.run(
    [sys.executable, "-c", PROGRAM],
    env={**os.environ, "PYTHONPATH": str(REPO)},
    capture_output=True,
    text=True,
    timeout=60,
  )
  assert done.returncode == 0, done.stderr
  assert done.stdout == "before\nTrue False\ntable\n"
  assert done.stderr == "[Gloo] Rank 0 is connected to 1 peer ranks.\n"


def test_a_stdout_without_descriptor_1_is_left_alone(capsys):
  from jitr.apps.native_stdout import native_output_to_stderr

  assert native_output_to_stderr() is False  # pytest's capture: not descriptor 1
  print("kept")
  assert capsys.readouterr().out == "kept\n"
