"""Scores computed elsewhere (a CSV / TSV table or SPICE's JSON) stored as top-K relevance
records: read back through training's reader they are the file's scores / scale (each image's
top K, 0 for a pair the file does not name); a bad file is one line and nothing is written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jitr.data.pairs import RetrievalSplit, make_batch
from jitr.data.relevance_reader import load_relevance_table
from jitr.relevance.precompute import PrecomputeOptions, precompute_external_scores
from jitr.relevance.records import RecordsMismatchError
from jitr.relevance.scores_file import ScoresFileError
from jitr.training.graded import make_graded_fn
from tests.relevance.conftest import SMALL_CAPTIONS

REPO = Path(__file__).resolve().parents[2]
N_IMG, N_CAP = 5, 25


@pytest.fixture(scope="module")
def caps_file(tmp_path_factory) -> Path:
  """A precomp ``test_caps.txt``: 5 images x 5 captions."""
  path = tmp_path_factory.mktemp("caps") / "test_caps.txt"
  path.write_text("\n".join(SMALL_CAPTIONS) + "\n", encoding="utf-8")
  return path


def scored_pairs(scale: float) -> np.ndarray:
  """``[N_img, N_cap]`` scores with NaN for a pair the file leaves out: about half the
  pairs, ties and zeros among them, every value in [0, scale]."""
  rng = np.random.default_rng(7)
  scores = np.round(rng.uniform(0, scale, (N_IMG, N_CAP)), 3)
  scores[0, 3] = scores[0, 5]  # a tie
  scores[1, 0] = 0.0  # a given zero
  scores[4, 24] = scale  # the largest score there is
  scores[rng.random((N_IMG, N_CAP)) < 0.5] = np.nan
  scores[2, 10] = np.nan  # left out of the file
  return scores


def write_csv(path: Path, scores: np.ndarray) -> None:
  rows = [f"{s:.3f},{i},{j}" for (i, j), s in np.ndenumerate(scores) if not np.isnan(s)]
  path.write_text("score,image,caption\n" + "\n".join(rows[::-1]) + "\n")  # any column order


def write_spice_json(path: Path, scores: np.ndarray, image_ids: list[str]) -> None:
  """The JSON form, each score as pycocoevalcap's Spice returns it for one candidate."""
  out = {}
  for (i, j), s in np.ndenumerate(scores):
    if not np.isnan(s):
      spice = {"All": {"f": float(s), "pr": 0.5, "re": 0.5}, "Object": {"f": 0.1}}
      out.setdefault(image_ids[i], {})[str(j)] = spice
  path.write_text(json.dumps(out))


def expected_relevance(scores: np.ndarray, scale: float, k: int) -> np.ndarray:
  """Each image's k best captions by score (a left-out pair scoring 0, ties by the lower
  caption index) at score / scale, every other pair 0."""
  given = np.nan_to_num(scores, nan=0.0)
  out = np.zeros_like(given)
  for i in range(N_IMG):
    best = sorted(range(N_CAP), key=lambda j: (-given[i, j], j))[:k]
    out[i, best] = given[i, best] / scale
  return out


def training_relevance(out: Path, name: str) -> np.ndarray:
  """``[N_img, N_cap]`` relevance as training reads ``topk:NAME``: the records' table in a
  split, every caption's batch row, ``make_graded_fn``'s matrix / the header's scale."""
  table = load_relevance_table(str(out))
  owner = np.repeat(np.arange(N_IMG), 5)
  split = RetrievalSplit(
    images=np.zeros((N_IMG, 1), np.float32),
    tokens=np.ones((N_CAP, 2), np.int32),
    lengths=np.full(N_CAP, 2, np.int32),
    caption_image=owner,
    topk={name: (table.topk_indices, table.topk_scores)},
  )
  batch = make_batch(split, np.arange(N_CAP))
  positives = owner[:, None] == owner[None, :]
  graded = make_graded_fn({"relevance": f"topk:{name}"})(batch, batch, positives)["relevance"]
  rows = np.asarray(graded)[::5] / table.relevance_scale  # the first row of each image
  return rows


def quiet(_line: str) -> None:
  pass


def test_a_csv_file_becomes_the_top_k_records_training_reads(caps_file, tmp_path):
  scale = 10.0  # scores of another range than SPICE's: their scale given
  scores = scored_pairs(scale)
  path = tmp_path / "bleu.csv"
  write_csv(path, scores)
  out = tmp_path / "rel"
  line = precompute_external_scores(
    str(caps_file),
    f"bleu={path}",
    str(out),
    scale=scale,
    options=PrecomputeOptions(top_k=4, images_per_shard=2, log=quiet),
  )
  assert line == f"wrote 3 shards of bleu relevance for 5 images to {out}"
  header = load_relevance_table(str(out)).header
  assert (header["estimator"], header["relevance"], header["contents"]["top_k"]) == (
    "bleu",
    {"kind": "score", "scale": scale},
    4,
  )
  np.testing.assert_allclose(
    training_relevance(out, "bleu"), expected_relevance(scores, scale, 4), atol=1e-6
  )
  # the same file again: every shard reused; another file into the same folder: refused
  precompute_external_scores(
    str(caps_file),
    f"bleu={path}",
    str(out),
    scale=scale,
    options=PrecomputeOptions(top_k=4, images_per_shard=2, log=quiet),
  )
  scores[0, 0] = 1.0
  write_csv(path, scores)
  with pytest.raises(RecordsMismatchError, match="field 'params'"):
    precompute_external_scores(
      str(caps_file),
      f"bleu={path}",
      str(out),
      scale=scale,
      options=PrecomputeOptions(top_k=4, images_per_shard=2),
    )


def test_spice_json_keyed_by_image_ids_keeps_the_whole_matrix(caps_file, tmp_path):
  scores = scored_pairs(1.0)
  ids = ["391895", "522418", "184613", "318219", "554625"]  # e.g. COCO image ids
  (tmp_path / "ids.txt").write_text("\n".join(ids) + "\n")
  write_spice_json(tmp_path / "spice.json", scores, ids)
  out = tmp_path / "rel"
  precompute_external_scores(
    str(caps_file),
    f"spice={tmp_path / 'spice.json'}",
    str(out),
    image_ids=str(tmp_path / "ids.txt"),
    options=PrecomputeOptions(log=quiet),
  )
  assert load_relevance_table(str(out)).header["contents"]["top_k"] == N_CAP  # every caption
  np.testing.assert_allclose(
    training_relevance(out, "spice"), np.nan_to_num(scores, nan=0.0), atol=1e-6
  )


HEADER = "image,caption,score\n"
BAD_FILES = {  # name: (file name, contents, the message after the file's path)
  "missing column": (
    "s.csv",
    "image,caption\n0,1\n",
    ":1: missing column score; expected a header row naming the columns image, caption, score "
    "(comma-separated), got ['image', 'caption']",
  ),
  "fields": ("s.csv", HEADER + "0,1\n", ":2: 2 fields, expected 3 (the header's columns)"),
  "not a number": ("s.csv", HEADER + "0,1,0.5\n0,2,high\n", ":3: score 'high' is not a number"),
  "not finite": (
    "s.tsv",
    "image\tcaption\tscore\n0\t1\tnan\n",
    ":2: score nan is not finite; expected a number in [0, 1]",
  ),
  "image out of range": (
    "s.csv",
    HEADER + "5,1,0.5\n",
    ":2: image '5' is not an image of {caps}; expected an image index of {caps}, 0..4",
  ),
  "caption out of range": (
    "s.csv",
    HEADER + "0,25,0.5\n",
    ":2: caption '25' is not a caption of {caps}; expected a caption index of the split, 0..24",
  ),
  "pair twice": (
    "s.csv",
    HEADER + "0,1,0.5\n1,1,0.5\n0,1,0.25\n",
    ":4: the pair (image 0, caption 1) is scored twice (also at {path}:2)",
  ),
  "outside the scale": (
    "s.csv",
    HEADER + "0,1,1.5\n",
    ":2: score 1.5 is outside [0, 1] (0 to the scale, the largest possible score)",
  ),
  "json pair twice": (
    "s.json",
    '{"0": {"1": 0.5}, "2": {"3": 0.1}, "0": {"1": 0.5}}',
    ": image '0', caption '1': the pair (image 0, caption 1) is scored twice (also at {path}: "
    "image '0', caption '1')",
  ),
  "json spice nan": (
    "s.json",
    '{"0": {"1": {"All": {"f": NaN, "pr": 0.0}}}}',
    ": image '0', caption '1': score nan is not finite; expected a number in [0, 1]",
  ),
  "json not a score": (
    "s.json",
    '{"0": {"1": {"All": {"pr": 0.5}}}}',
    ": image '0', caption '1': score {\"All\": {\"pr\": 0.5}} is not a number; expected a "
    "number or SPICE's per-candidate dict with a number at ['All']['f']",
  ),
  "json image not an object": (
    "s.json",
    '{"0": 0.5}',
    ": image '0' holds no object of captions; expected an object {image: {caption: score}}",
  ),
  "extension": ("s.txt", HEADER, ": unknown scores file extension '.txt'; expected one of "),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_scores_file_is_one_line_and_nothing_is_written(caps_file, tmp_path, case):
  name, text, message = BAD_FILES[case]
  path = tmp_path / name
  path.write_text(text)
  with pytest.raises(ScoresFileError) as err:
    precompute_external_scores(
      str(caps_file), f"spice={path}", str(tmp_path / "rel"), options=PrecomputeOptions(log=quiet)
    )
  want = f"{path}" + message.replace("{caps}", str(caps_file)).replace("{path}", str(path))
  assert str(err.value).startswith(want) and "\n" not in str(err.value), str(err.value)
  assert sorted(os.listdir(tmp_path)) == [name]


def test_the_console_script_refuses_a_bad_file_in_one_line(caps_file, tmp_path):
  exe = shutil.which("jitr-precompute", path=os.path.dirname(sys.executable)) or "jitr-precompute"
  (tmp_path / "spice.csv").write_text(HEADER + "0,1,0.5\n0,30,0.5\n")
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  args = [f"--captions={caps_file}", "--scores=spice=spice.csv", "--out=rel"]
  done = subprocess.run(
    [exe, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
  )
  assert done.returncode == 1
  assert done.stderr.splitlines()[-1] == (
    f"jitr-precompute: error: spice.csv:3: caption '30' is not a caption of {caps_file}; "
    "expected a caption index of the split, 0..24"
  )
  assert os.listdir(tmp_path) == ["spice.csv"]
