"""The batch keys of stored relevance data are spelled in one module, jitr/data/batch_keys.py:
the batch writer (jitr.data.pairs) and the graded builders (jitr.training.graded) only call it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np

from jitr.data import batch_keys
from jitr.data.pairs import RetrievalSplit, make_batch

JITR = Path(__file__).resolve().parents[2] / "jitr"
DEFINING = JITR / "data" / "batch_keys.py"
# "vectors/NAME/...", "topk/NAME/...", "teacher/NAME/...": three segments (the relevance
# TFRecords' own features, "topk/indices" and "topk/scores", have two: another namespace).
PREFIX = re.compile(r"^(vectors|topk|teacher)/")
BATCH_KEY = re.compile(r"^(vectors|topk|teacher)/[^/]*/")


def _batch_key_literals(path: Path) -> list[str]:
  """The string literals and f-strings of ``path`` spelled like a stored-data batch key."""
  found = []
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    if isinstance(node, ast.JoinedStr):  # f"vectors/{name}/captions"
      head = node.values[0] if node.values else None
      if isinstance(head, ast.Constant) and PREFIX.match(str(head.value)):
        found.append(ast.unparse(node))
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
      if BATCH_KEY.match(node.value):
        found.append(repr(node.value))
  return found


def test_batch_keys_are_spelled_only_in_their_module():
  spelled = {
    str(path.relative_to(JITR.parent)): keys
    for path in sorted(JITR.rglob("*.py"))
    if path != DEFINING and (keys := _batch_key_literals(path))
  }
  assert spelled == {}, f"use jitr.data.batch_keys instead of literal keys: {spelled}"
  assert len(_batch_key_literals(DEFINING)) == 6  # the scan sees the definitions


def test_make_batch_writes_the_keys_the_functions_name():
  """Every stored-data key of a batch is one of the functions' keys, and each is there."""
  split = RetrievalSplit(
    images=np.zeros((2, 3), np.float32),
    tokens=np.ones((4, 5), np.int32),
    lengths=np.full(4, 5, np.int32),
    caption_image=np.array([0, 0, 1, 1]),
    vectors={"lsa": np.eye(4, dtype=np.float32)},
    topk={"cider": (np.zeros((2, 2), np.int64), np.ones((2, 2), np.float32))},
    teacher={"runs/vse:2": (np.ones((2, 3), np.float32), np.ones((4, 3), np.float32))},
  )
  batch = make_batch(split, np.array([3, 0]))
  keys = {
    *batch_keys.vectors_keys("lsa"),
    *batch_keys.topk_keys("cider"),
    *batch_keys.teacher_keys("runs/vse:2"),
  }
  assert {k for k in batch if BATCH_KEY.match(k)} == keys
  np.testing.assert_array_equal(batch["vectors/lsa/references"][0], np.eye(4)[[2, 3]])
  np.testing.assert_array_equal(batch["teacher/runs/vse:2/captions"].shape, (2, 3))


def test_the_scan_sees_literal_keys_and_leaves_record_features(tmp_path):
  source = tmp_path / "m.py"
  source.write_text(
    'a = f"vectors/{name}/captions"\nb = "topk/cider/scores"\nc = f"teacher/{w}/images"\n'
    'd = "topk/indices"\ne = f"caption/{x}"\n'
  )
  assert _batch_key_literals(source) == [
    "f'vectors/{name}/captions'",
    "'topk/cider/scores'",
    "f'teacher/{w}/images'",
  ]
